import { join } from "node:path";
import { DEFAULTS, EXECUTOR_KINDS, loadConfigFile, redacted, resolveServeConfig } from "../../config";
import { createLogger } from "../../log";
import { startNode } from "../../node";
import type { Command } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";

const flags = {
  host: { type: "string", value: "ADDR" },
  port: { type: "number", value: "PORT" },
  "advertise-url": { type: "string", value: "URL" },
  executor: { type: "string", value: "KIND" },
  "model-url": { type: "string", value: "URL" },
  model: { type: "string", value: "NAME" },
  "system-prompt": { type: "string", value: "TEXT" },
  "max-body": { type: "number", value: "BYTES" },
  "max-concurrent": { type: "number", value: "N" },
  "max-queued": { type: "number", value: "N" },
  "caller-share": { type: "number", value: "FRACTION" },
  description: { type: "string", value: "TEXT" },
  "plain-http-port": { type: "number", value: "PORT" },
  deadline: { type: "number", value: "SECONDS" },
  "output-cap": { type: "number", value: "BYTES" },
  "max-tasks-per-context": { type: "number", value: "N" },
  temperature: { type: "number", value: "T" },
  "max-tokens": { type: "number", value: "N" },
  "model-api-key-file": { type: "string", value: "FILE" },
  "hermes-url": { type: "string", value: "URL" },
  "hermes-api-key-file": { type: "string", value: "FILE" },
  "push-concurrency": { type: "number", value: "N" },
  "push-host-concurrency": { type: "number", value: "N" },
  "push-caller-concurrency": { type: "number", value: "N" },
  "push-timeout": { type: "number", value: "SECONDS" },
  config: { type: "string", value: "FILE" },
  check: { type: "boolean" },
  quiet: { type: "boolean" },
} as const;

export const serveCommand: Command = {
  name: "serve",
  summary: "run the node: A2A over mutual TLS, tasks in SQLite",
  help: `Run the node: an A2A v1.0 JSON-RPC server behind mutual TLS. Only clients with a certificate from this
fleet's CA get past the TLS handshake; their certificate's CN is their identity. Tasks, their history and
artifacts are kept in HOME/a2a-node.db. Stops gracefully on SIGTERM/SIGINT: running tasks get a grace period,
then end FAILED ("interrupted") so no accepted task is left without an outcome; a task waiting for input keeps
waiting (its answer resumes it after the restart), and a Hermes run is left running and re-attached to at the
next start.

USAGE
  a2a-node serve [--host ADDR] [--port PORT] [--executor ${EXECUTOR_KINDS.join("|")}] [--model-url URL] [--model NAME]

FLAGS
  --host ADDR            address to listen on (env A2A_NODE_HOST; default ${DEFAULTS.host})
  --port PORT            port (env A2A_NODE_PORT; default ${DEFAULTS.port})
  --advertise-url URL    base URL written in the agent card (env A2A_NODE_ADVERTISE_URL; default: the bound
                         address, the host name, or the node name, whichever the certificate covers)
  --executor KIND        echo: answer with the message's own text; openai: ask an OpenAI-compatible model
                         server (tokens stream back); hermes: run it on a Hermes Agent (runs API, approvals
                         become input-required); conformance: behave as the A2A conformance kit expects
                         (env A2A_NODE_EXECUTOR; default ${DEFAULTS.executor})
  --model-url URL        OpenAI-compatible API base (env A2A_NODE_MODEL_URL; default ${DEFAULTS.modelUrl}, Ollama)
  --model NAME           model name sent to it (env A2A_NODE_MODEL; default ${DEFAULTS.model})
  --system-prompt TEXT   system prompt for the model
  --max-body BYTES       largest request body accepted (default ${DEFAULTS.maxBodyBytes})
  --max-concurrent N     tasks executing at once (env A2A_NODE_MAX_CONCURRENT; default ${DEFAULTS.maxConcurrent})
  --max-queued N         tasks waiting for a slot before new ones are refused (default ${DEFAULTS.maxQueued})
  --caller-share FRACTION
                         the part of those slots and of that queue one caller may hold, so one peer's stuck
                         tasks cannot lock the others out; waiting callers take turns (default ${DEFAULTS.callerShare})
  --deadline SECONDS     a task still running after this ends FAILED (default ${DEFAULTS.deadlineMs / 1000})
  --output-cap BYTES     artifact text beyond this is cut and the task marked truncated (default ${DEFAULTS.outputCapBytes})
  --max-tasks-per-context N
                         tasks one caller may start in one conversation (default ${DEFAULTS.maxTasksPerContext});
                         stops two agents delegating to each other forever
  --temperature T        sampling temperature sent to the model
  --max-tokens N         answer length limit sent to the model
  --model-api-key-file FILE
                         read the model API key from FILE (must be mode 0600)
  --hermes-url URL       Hermes Agent API server (env A2A_NODE_HERMES_URL; default ${DEFAULTS.hermesUrl})
  --hermes-api-key-file FILE
                         read the Hermes API key from FILE (0600); else A2A_NODE_HERMES_API_KEY or HERMES_API_KEY
  --description TEXT     description in the agent card
  --plain-http-port P    also serve plain HTTP on 127.0.0.1:P (loopback only, no identity: every caller is
                         '@local'), for local tools and the A2A conformance kit
  --push-concurrency N   webhook (push notification) requests in flight at once (default ${DEFAULTS.pushConcurrency})
  --push-host-concurrency N
                         of those, at most N to one webhook host (default ${DEFAULTS.pushHostConcurrency}): a slow or
                         unanswering host cannot take every slot
  --push-caller-concurrency N
                         of those, at most N for the webhooks of one caller (default ${DEFAULTS.pushCallerConcurrency}); free
                         slots go to the callers in turn
  --push-timeout SECONDS a webhook request (DNS lookup included) is given up after this and retried later
                         (default ${DEFAULTS.pushTimeoutMs / 1000})
  --config FILE          TOML settings (default HOME/config.toml if present; see scripts/config.example.toml);
                         flags and environment variables override it
  --check                print the effective configuration (secrets redacted) and exit
  --quiet                log only warnings and errors
  The model API key comes from --model-api-key-file, or A2A_NODE_MODEL_API_KEY / OPENAI_API_KEY; it is
  never printed.

EXAMPLES
  a2a-node serve --executor echo --port 9443
  a2a-node serve --model-url http://127.0.0.1:8080/v1 --model qwen2.5   # llama.cpp server
  HERMES_API_KEY=... a2a-node serve --executor hermes --hermes-url http://127.0.0.1:8642
  A2A_NODE_HOME=/var/lib/a2a-node a2a-node serve --host 10.0.0.7

EXIT CODES
  0 stopped by a signal   1 could not start (no certificate, port in use, ...)   2 usage error
`,
  async run(argv, { io, home }) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length) throw new UsageError(`serve takes no arguments (got '${positionals[0]}')`);
    const file = loadConfigFile(f.config ?? join(home, "config.toml"), f.config !== undefined);
    const config = resolveServeConfig(
      {
        host: f.host,
        port: f.port,
        advertiseUrl: f["advertise-url"],
        executor: f.executor,
        modelUrl: f["model-url"],
        model: f.model,
        systemPrompt: f["system-prompt"],
        maxBody: f["max-body"],
        maxConcurrent: f["max-concurrent"],
        maxQueued: f["max-queued"],
        callerShare: f["caller-share"],
        description: f.description,
        plainHttpPort: f["plain-http-port"],
        deadline: f.deadline,
        outputCap: f["output-cap"],
        maxTasksPerContext: f["max-tasks-per-context"],
        temperature: f.temperature,
        maxTokens: f["max-tokens"],
        modelApiKeyFile: f["model-api-key-file"],
        hermesUrl: f["hermes-url"],
        hermesApiKeyFile: f["hermes-api-key-file"],
        pushConcurrency: f["push-concurrency"],
        pushHostConcurrency: f["push-host-concurrency"],
        pushCallerConcurrency: f["push-caller-concurrency"],
        pushTimeout: f["push-timeout"],
      },
      io.env,
      file,
    );
    if (f.check) {
      io.stdout.write(`${JSON.stringify({ home, ...redacted(config) }, null, 2)}\n`);
      return ExitCode.Ok;
    }
    const log = createLogger((line) => io.stderr.write(line), f.quiet);
    let node;
    try {
      node = await startNode(home, config, log);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === "EADDRINUSE")
        throw new CliError(`port ${config.port} on ${config.host} is already in use`, ExitCode.Failure, "stop the other process, or pass --port");
      if (e.code === "EACCES")
        throw new CliError(`not allowed to listen on ${config.host}:${config.port}`, ExitCode.Failure, "use a port above 1023");
      throw err;
    }
    const stop = io.stopSignal;
    if (stop) {
      await new Promise<void>((resolve) => {
        if (stop.aborted) resolve();
        else stop.addEventListener("abort", () => resolve(), { once: true });
      });
      log.info("stopping", { signal: String(stop.reason ?? "") });
    }
    await node.stop();
    return ExitCode.Ok;
  },
};

/**
 * The AgentExecutor contract (agent-executor-contract.ts) run against each executor the node ships, each stating
 * what it claims. Backends: none (echo, conformance), the OpenAI model twin (test/fakes/openai.ts), the Hermes
 * runs-API twin (test/fakes/hermes/).
 */
import { ConformanceExecutor } from "../../src/executors/conformance-executor";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { HermesExecutor } from "../../src/executors/hermes-executor";
import { OpenAiCompatibleExecutor } from "../../src/executors/openai-executor";
import { hermes, startFakeHermes } from "../fakes/hermes/server";
import { startFakeModel } from "../fakes/openai";
import { agentExecutorContract, userMessage, type ExecutorUnderTest, type Scenario } from "./agent-executor-contract";

/** An executor with no backend: nothing starts or stops but the execution itself. */
const alone = (executor: ExecutorUnderTest["executor"], message: ExecutorUnderTest["message"]): ExecutorUnderTest => ({
  executor,
  message,
  release: () => {},
  starts: () => 0,
  untilStarted: async () => {},
  stops: () => 0,
  untilStopped: async () => {},
  close: async () => {},
});

agentExecutorContract({
  name: "echo (no backend)",
  kind: "echo",
  onRestart: "rerun",
  answer: "hello contract",
  claims: { cancel: false, asks: "never", limit: false },
  start: async () => alone(new EchoExecutor(), () => userMessage("hello contract")),
});

// The conformance executor plays the A2A TCK's scenarios, chosen by the message's messageId prefix.
const TCK: Record<Scenario, string> = {
  answer: "tck-complete-task",
  hold: "test-resubscribe-message-id",
  ask: "tck-input-required",
};
agentExecutorContract({
  name: "conformance (the TCK's scenarios, no backend)",
  kind: "conformance",
  onRestart: "rerun",
  answer: "Hello from TCK",
  claims: { cancel: true, asks: "outcome", limit: false },
  // A held task waits a minute: only the cancel can end it within the test.
  start: async () =>
    alone(new ConformanceExecutor({ longRunningMs: 60_000 }), (s) =>
      userMessage("contract", undefined, `${TCK[s]}-${crypto.randomUUID()}`),
    ),
});

agentExecutorContract({
  name: "openai (the OpenAI-compatible model twin)",
  kind: "openai",
  onRestart: "rerun",
  answer: "echo: hello contract",
  claims: { cancel: true, asks: "never", limit: true },
  start: async (scenario) => {
    // "hold": one token streams, then the model stalls until the client goes away.
    const model = startFakeModel(scenario === "hold" ? { stallAfterTokens: 1 } : {});
    return {
      executor: new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m", retryBaseMs: 5 }),
      message: () => userMessage("hello contract"),
      release: () => {},
      starts: () => model.requests.length,
      untilStarted: () => model.received(1),
      stops: () => model.abortCount,
      untilStopped: () => model.sawAbort(1),
      close: async () => model.stop(),
    };
  },
});

const FAST = { pollFirstMs: 10, pollMaxMs: 50, maxRetryDelayMs: 50 };
const DEPLOY = { command: "kubectl rollout restart deploy/web", description: "restart a production deployment" };
const HERMES_SCRIPTS = {
  answer: [hermes.delta("hello "), hermes.delta("contract"), hermes.completed()],
  hold: [hermes.delta("Working. "), hermes.gate("hold"), hermes.delta("Done."), hermes.completed()],
  ask: [
    hermes.approval(DEPLOY, { deny: [hermes.delta("Not restarting."), hermes.completed()] }),
    hermes.delta("Restarted."),
    hermes.completed(),
  ],
};
agentExecutorContract({
  name: "hermes (the Hermes runs-API twin)",
  kind: "hermes",
  onRestart: "reattach",
  answer: "hello contract",
  reply: { answer: "yes", then: "Restarted." },
  claims: { cancel: true, asks: "input", limit: true },
  start: async (scenario) => {
    const fake = startFakeHermes({ apiKey: "k", script: HERMES_SCRIPTS[scenario] });
    const stops = () => fake.runs.reduce((n, r) => n + r.stopRequests, 0);
    return {
      executor: new HermesExecutor({ baseUrl: fake.url, apiKey: "k", timing: FAST }),
      message: () => userMessage(`contract ${scenario}`),
      release: () => fake.release("hold"),
      starts: () => fake.runs.length,
      untilStarted: () => fake.runCreated(1).then(() => {}),
      stops,
      untilStopped: () => fake.stopRequested().then(() => {}),
      close: () => fake.stop(),
    };
  },
});

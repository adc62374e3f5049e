import type { ServeConfig } from "../config";
import { ConformanceExecutor } from "./conformance-executor";
import { EchoExecutor } from "./echo-executor";
import type { AgentExecutor } from "./executor";
import { HermesExecutor } from "./hermes-executor";
import { OpenAiCompatibleExecutor } from "./openai-executor";

/** The executor the `executor` setting names, configured from the settings. */
export function createExecutor(config: ServeConfig): AgentExecutor {
  switch (config.executor) {
    case "echo":
      return new EchoExecutor();
    case "hermes":
      // The keys are read at each call, so a key file SIGHUP read again applies to the next request.
      return new HermesExecutor({
        baseUrl: config.hermesUrl,
        get apiKey() {
          return config.hermesApiKey;
        },
      });
    case "conformance":
      return new ConformanceExecutor();
    case "openai":
      return new OpenAiCompatibleExecutor({
        baseUrl: config.modelUrl,
        model: config.model,
        get apiKey() {
          return config.modelApiKey;
        },
        systemPrompt: config.systemPrompt,
        temperature: config.temperature,
        maxTokens: config.maxTokens,
        historyChars: config.historyChars,
        skills: config.skillModels,
      });
  }
}

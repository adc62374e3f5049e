import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "./executor";

/**
 * Behaves as the A2A conformance kit (a2a-tck) expects of a system under test, keyed by the messageId prefix
 * of the message that starts a task. Anything else completes with "Hello from TCK".
 */
export class ConformanceExecutor implements AgentExecutor {
  readonly kind = "conformance";

  async execute(request: ExecutionRequest): Promise<ExecutionOutcome> {
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: [{ artifactId: `${request.taskId}-result`, parts: [{ text: "Hello from TCK" }] }],
    };
  }
}

import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "./executor";
import { messageText } from "./executor";

/**
 * Completes every task with one artifact whose text is the incoming message's text. For trying a fleet out,
 * for tests, and for measuring the node's own overhead with no model in the way.
 */
export class EchoExecutor implements AgentExecutor {
  readonly kind = "echo";
  /** Echoing again gives the same answer. */
  readonly onRestart = "rerun";

  async execute(request: ExecutionRequest): Promise<ExecutionOutcome> {
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: [
        { artifactId: `${request.taskId}-echo`, name: "echo", parts: [{ text: messageText(request.message) }] },
      ],
    };
  }
}

import { accumulate } from "../tasks/artifacts";
import type { Artifact, StreamItem } from "../protocol/types";
import { isSettled } from "../protocol/types";

/**
 * Hermes's own A2A client (plugins/platforms/a2a/tools.py, `_send_task_stream`) gathers the parts of every
 * artifact update of a stream and joins them with newlines, whatever `append` says: an answer streamed in
 * chunks reaches its model one chunk per line, and an answer that replaces streamed narration reaches it
 * twice. It shows nothing before the stream ends, so for it nothing is lost by waiting: its streams hold the
 * artifact updates back and send each changed artifact whole, once, just before the status update that
 * settles the task (or at the stream's end), as GetTask would show it. The Task, status updates and
 * messages pass at once. Like mapStream, return() reaches the source at once.
 */
export function wholeArtifacts(items: AsyncIterable<StreamItem>): AsyncIterable<StreamItem> {
  return {
    [Symbol.asyncIterator]() {
      const it = items[Symbol.asyncIterator]();
      const out: StreamItem[] = [];
      let artifacts: Artifact[] = [];
      const changed = new Set<string>();
      let ids: { taskId: string; contextId: string } | undefined;
      let ended = false;
      const flush = () => {
        if (!ids) return;
        for (const artifact of artifacts)
          if (changed.has(artifact.artifactId))
            out.push({ response: { artifactUpdate: { ...ids, artifact, lastChunk: true } } });
        changed.clear();
      };
      return {
        async next(): Promise<IteratorResult<StreamItem>> {
          while (out.length === 0) {
            if (ended) return { value: undefined, done: true };
            const r = await it.next();
            if (r.done) {
              ended = true;
              flush();
              continue;
            }
            const item = r.value;
            const res = item.response;
            if ("artifactUpdate" in res) {
              const u = res.artifactUpdate;
              ids = { taskId: u.taskId, contextId: u.contextId };
              artifacts = accumulate(artifacts, u.artifact, u.append === true);
              changed.add(u.artifact.artifactId);
              continue;
            }
            if ("task" in res) {
              // What the task already holds is sent again with the rest: the client reads artifacts from updates only.
              ids = { taskId: res.task.id, contextId: res.task.contextId };
              artifacts = [...(res.task.artifacts ?? [])];
              for (const a of artifacts) changed.add(a.artifactId);
            } else if ("statusUpdate" in res && isSettled(res.statusUpdate.status.state)) {
              ids = { taskId: res.statusUpdate.taskId, contextId: res.statusUpdate.contextId };
              flush();
            }
            out.push(item);
          }
          return { value: out.shift() as StreamItem, done: false };
        },
        async return(): Promise<IteratorResult<StreamItem>> {
          ended = true;
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}

import type { Command } from "../command";
import { commandGroup } from "../command-group";
import { list } from "./tasks/list";

export const tasksCommand: Command = commandGroup({
  name: "tasks",
  summary: "list the tasks this node delegated to its peers",
  intro: "",
  subcommands: [list],
  exitCodes: `  0 listed   1 the peer answered an error   2 usage error (also an outside peer's unreadable token file)   3 unknown peer
  4 cannot connect to a peer   5 a peer did not answer in time   8 refused by a peer (TLS, certificate, name, pin, an unsigned card; an outside peer's 401/403)
  (without --agent: the code of the first peer that failed, after listing the others)
`,
});

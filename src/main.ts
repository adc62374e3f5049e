import "reflect-metadata"; // @peculiar/x509's dependency injection needs it loaded first
import { processIo } from "./cli/io";
import { runCli } from "./cli/registry";
import { dropUnreadableExtraCaCerts } from "./extra-ca-certs";

await dropUnreadableExtraCaCerts(process.env);
process.exit(await runCli(process.argv.slice(2), processIo()));

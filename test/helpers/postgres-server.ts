// The server itself is shared with the scripts (replica bench, local replica setup).
export { databaseName, startPostgres, type PostgresServer } from "../../scripts/postgres-server";

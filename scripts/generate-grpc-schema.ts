/**
 * Writes src/grpc/a2a-schema.generated.ts from the vendored src/grpc/proto/a2a.proto, so the binary carries
 * the spec's schema without a .proto parser at run time or generated protobuf classes.
 *   bun scripts/generate-grpc-schema.ts           write it
 *   bun scripts/generate-grpc-schema.ts --check   exit 1 if the committed file is not what the proto gives
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderSchemaModule } from "../src/grpc/schema-module";

const root = join(import.meta.dir, "..");
const out = join(root, "src", "grpc", "a2a-schema.generated.ts");
const text = renderSchemaModule(readFileSync(join(root, "src", "grpc", "proto", "a2a.proto"), "utf8"));

if (process.argv.includes("--check")) {
  if (readFileSync(out, "utf8") !== text) {
    console.error(`${out} is stale: run bun scripts/generate-grpc-schema.ts`);
    process.exit(1);
  }
} else {
  writeFileSync(out, text);
  console.log(`wrote ${out}`);
}

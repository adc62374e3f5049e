/**
 * Why a service operation could not be done. The service is a library the CLI calls: it says what kind of
 * refusal this is, and the CLI (cli/commands/service.ts) maps the kind to its exit code.
 */
export type ServiceErrorKind = "failure" | "not-found" | "usage";

export class ServiceError extends Error {
  constructor(
    message: string,
    readonly kind: ServiceErrorKind = "failure",
    /** The next step to take, one line. */
    readonly hint?: string,
  ) {
    super(message);
    this.name = "ServiceError";
  }
}

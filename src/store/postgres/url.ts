/** A database URL safe to print: its password (and any password-like parameter) replaced by "***". */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    for (const key of [...u.searchParams.keys()])
      if (/pass|secret|token|key/i.test(key)) u.searchParams.set(key, "***");
    return u.href;
  } catch {
    return "(a database URL that does not parse)";
  }
}

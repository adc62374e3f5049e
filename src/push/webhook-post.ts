import { fetchPinned, type PushFetch } from "./pinned-fetch";
import type { StoredPushConfig } from "./push-config-store";
import { pushHeaders } from "./signature";
import type { WebhookTarget } from "./ssrf-guard";

export interface PostOptions {
  /** Resolves and checks the URL; the request then goes to a checked address. Omitted: fetch resolves (tests). */
  guard?: { resolve(url: string): Promise<WebhookTarget> };
  fetch: PushFetch;
  /** One deadline for the lookup and the request together. */
  timeoutMs: number;
  /** Unix seconds, for the signature's timestamp. */
  nowSeconds: number;
}

/**
 * One attempt of one delivery: POSTs `delivery.body` to the config's webhook. Resolves to undefined when the
 * receiver answered 2xx, else to why not (never throws: every failure is a reason to retry or give up).
 */
export async function postDelivery(
  delivery: { id: string; body: string },
  config: StoredPushConfig,
  options: PostOptions,
): Promise<string | undefined> {
  // A slot is never held longer than the timeout, however slow DNS is.
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    // Checked again at delivery: the name may resolve elsewhere now than when the config was created.
    const target = options.guard ? await abortable(options.guard.resolve(config.url), signal) : undefined;
    const init: RequestInit = {
      method: "POST",
      headers: pushHeaders(delivery.body, {
        token: config.token,
        authentication: config.authentication,
        timestamp: options.nowSeconds,
        deliveryId: delivery.id,
      }),
      body: delivery.body,
      // A redirect would send the request to a target the guard never saw.
      redirect: "manual",
      signal,
    };
    const res = target ? await fetchPinned(target, init, options.fetch) : await options.fetch(config.url, init);
    // Read the answer out so the connection can be reused; its content does not matter.
    await res.arrayBuffer().catch(() => undefined);
    if (res.status >= 200 && res.status < 300) return undefined;
    return res.status >= 300 && res.status < 400
      ? `HTTP ${res.status} (redirects are not followed)`
      : `HTTP ${res.status}`;
  } catch (err) {
    return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }
}

/** `p`, or the signal's reason once it aborts (a DNS lookup cannot be cancelled; its late answer is dropped). */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Where a browser says a request comes from, and whether its body is one a page on another site
 * could send without a CORS preflight. Pure: takes the header values, so every HTTP surface
 * (the monitor, bull-board, the web chat) applies the same rule.
 */

/** The headers of a request that the checks read (lower-case names; absent = undefined). */
export interface RequestHeadersLike {
  method: string;
  /** `Host` (or the URL's host when the header is absent). */
  host: string;
  origin?: string;
  secFetchSite?: string;
  contentType?: string;
  contentLength?: string;
  transferEncoding?: string;
}

/** True for GET, HEAD and OPTIONS: requests that change nothing. */
export function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
}

/**
 * True for a state-changing request that a browser says came from another origin: `Sec-Fetch-Site`
 * other than `same-origin`/`none`, else an `Origin` whose host is not `host` (`Origin: null`
 * included). Tools like curl send neither and are not refused here.
 */
export function isCrossSiteWrite(request: RequestHeadersLike): boolean {
  if (isSafeMethod(request.method)) return false;
  if (request.secFetchSite !== undefined) return request.secFetchSite !== 'same-origin' && request.secFetchSite !== 'none';
  if (request.origin === undefined) return false;
  try {
    return new URL(request.origin).host !== request.host;
  } catch {
    return true; // `Origin: null` (sandboxed or opaque): not this page
  }
}

/**
 * True unless a state-changing request carries a body that is not `application/json` (no body at
 * all is fine): `text/plain`, forms and multipart are what another site can send without a preflight.
 */
export function hasJsonOrNoBody(request: RequestHeadersLike): boolean {
  if (isSafeMethod(request.method)) return true;
  if (request.contentType === undefined) {
    if (request.contentLength !== undefined) return !(Number(request.contentLength) > 0);
    return request.transferEncoding === undefined;
  }
  return /^application\/json\s*(;|$)/i.test(request.contentType.trim());
}

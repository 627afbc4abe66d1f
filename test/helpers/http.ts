import net from 'node:net';
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  method?: string;
  /** The API key to send; `null` sends none. Defaults to the caller's key. */
  key?: string | null;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string is sent as it is. */
  body?: unknown;
}

export function methodOf(opts: RequestOptions): string {
  return opts.method ?? (opts.body === undefined ? 'GET' : 'POST');
}

/** Sends one request with fetch and reads the whole answer, parsing JSON when it is JSON. */
export async function send(url: string, opts: RequestOptions, defaultKey: string): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  const auth = opts.key === undefined ? defaultKey : opts.key;
  if (auth !== null) headers.authorization ??= `Bearer ${auth}`;
  let body: string | undefined;
  if (typeof opts.body === 'string') body = opts.body;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method: methodOf(opts), headers, body });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: left as text for the assertion that follows */
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/**
 * Sends `request` as written on a fresh connection to `baseUrl`; the first whole answer, or what
 * came before the connection closed or `ms` passed (a keep-alive connection would stay open).
 */
export function rawExchange(baseUrl: string, request: string, ms = 2000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(new URL(baseUrl).port), '127.0.0.1', () => socket.write(request));
    let data = '';
    const done = () => (socket.destroy(), resolve(data));
    const timer = setTimeout(done, ms);
    socket.on('data', (d) => {
      data += d;
      const head = data.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(data)?.[1];
      if (head >= 0 && length !== undefined && data.length >= head + 4 + Number(length)) (clearTimeout(timer), done());
    });
    socket.on('end', () => (clearTimeout(timer), done()));
    socket.on('error', () => (clearTimeout(timer), done()));
  });
}

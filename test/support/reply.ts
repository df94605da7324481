/** Reading answers, shared by the Node harness and the workerd suite (so it imports nothing). */
export interface Reply {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

/** A response with its body read, and parsed when it is JSON. */
export async function readReply(res: Response): Promise<Reply> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

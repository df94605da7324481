import { AwsClient } from 'aws4fetch';
import type { DeliveryMessage, DeliveryQueue } from '../edge/deliveries.ts';

/** SQS takes at most 10 messages per SendMessageBatch. */
const SQS_BATCH = 10;

export interface SqsOptions {
  queueUrl: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  fetch?: typeof fetch;
}

/**
 * The delivery queue on AWS: SQS's JSON protocol, signed with the function's own credentials (the
 * variables Lambda sets). A batch entry SQS refuses is an error: the round that dispatched it fails,
 * and the next one dispatches the destination again.
 */
export function sqsQueue(options: SqsOptions): DeliveryQueue {
  const aws = new AwsClient({ ...options.credentials, service: 'sqs', region: options.region });
  const endpoint = new URL(options.queueUrl).origin;
  const call = async (action: string, body: object) => {
    const res = await aws.fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${action}` },
      body: JSON.stringify({ QueueUrl: options.queueUrl, ...body }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`SQS ${action} failed: ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text || '{}') as { Failed?: { Id: string; Message?: string }[] };
  };
  const sendBatch = async (messages: Iterable<{ body: DeliveryMessage }>) => {
    const all = [...messages];
    for (let at = 0; at < all.length; at += SQS_BATCH) {
      const entries = all
        .slice(at, at + SQS_BATCH)
        .map((m, i) => ({ Id: String(at + i), MessageBody: JSON.stringify(m.body) }));
      const answer = await call('SendMessageBatch', { Entries: entries });
      const failed = answer.Failed ?? [];
      if (failed.length > 0) throw new Error(`SQS refused ${failed.length} message(s): ${failed[0]?.Message ?? ''}`);
    }
  };
  return {
    send: (body) => call('SendMessage', { MessageBody: JSON.stringify(body) }),
    sendBatch,
  };
}

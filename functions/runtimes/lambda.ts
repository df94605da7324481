// AWS Lambda entry (docs/deploy.md): `handler` for API Gateway (v1, v2), Function URLs and ALB;
// `streamHandler` for response streaming; `scheduled` for EventBridge; `deliveries` for the SQS
// delivery queue; `migrate` as a one-off invocation. The container's database client is kept
// between invocations.
import { handle, streamHandle } from 'hono/aws-lambda';
import type { DeliveryQueue } from '../edge/deliveries.ts';
import { deliveryRound, localRound, scheduledRound } from '../edge/rounds.ts';
import type { CallContext } from '../fetch-shell.ts';
import { sqsQueue } from './sqs-queue.ts';
import { openStandalone, type Standalone } from './standalone.ts';

/** What a Lambda event's request context says of the caller, API Gateway v1 or v2. */
interface LambdaBindings {
  requestContext?: { identity?: { sourceIp?: string }; http?: { sourceIp?: string } };
}

export interface SqsEvent {
  Records: ReadonlyArray<{ body: string }>;
}

/**
 * The handlers of one environment. Lambda keeps nothing running after a handler returns, so
 * work handed over is awaited before it does.
 */
export function lambdaHandlers(env: Record<string, string | undefined>) {
  let opened: Promise<Standalone> | null = null;
  const standalone = () => (opened ??= openStandalone(env, { migrate: false }));
  const queue = (): DeliveryQueue | null => {
    const queueUrl = env.ECPDS_SQS_QUEUE_URL;
    if (!queueUrl) return null;
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = env;
    if (!AWS_ACCESS_KEY_ID || !AWS_SECRET_ACCESS_KEY) throw new Error('ECPDS_SQS_QUEUE_URL needs the AWS credentials');
    return sqsQueue({
      queueUrl,
      region: env.AWS_REGION ?? 'us-east-1',
      credentials: {
        accessKeyId: AWS_ACCESS_KEY_ID,
        secretAccessKey: AWS_SECRET_ACCESS_KEY,
        sessionToken: AWS_SESSION_TOKEN,
      },
    });
  };
  const settling = async <T>(work: (call: CallContext) => Promise<T>): Promise<T> => {
    const pending: Promise<unknown>[] = [];
    try {
      return await work({ waitUntil: (p) => void pending.push(p) });
    } finally {
      await Promise.allSettled(pending);
    }
  };
  const app = {
    fetch: async (request: Request, bindings: LambdaBindings) => {
      const { shell } = await standalone();
      const context = bindings.requestContext;
      const address = context?.http?.sourceIp ?? context?.identity?.sourceIp;
      return settling((call) => shell.fetch(request, { ...call, address }));
    },
  };
  return {
    /** The environment's shell, opened on the first invocation. */
    standalone,
    handler: handle(app as never),
    streamHandler: () => streamHandle(app as never),
    /** EventBridge: sweep, retrievals, then the due destinations to SQS (or, without a queue, delivered here). */
    scheduled: async () => {
      const { shell, sending } = await standalone();
      const sqs = queue();
      await settling((call) =>
        sqs ? scheduledRound(shell, { ...sending, queue: sqs }, call) : localRound(shell, sending, call),
      );
    },
    /** The SQS delivery queue's consumer. */
    deliveries: async (event: SqsEvent) => {
      const { shell, sending } = await standalone();
      const messages = event.Records.map((record) => ({ body: parsed(record.body) }));
      await settling((call) => deliveryRound(shell, { ...sending, queue: queue() }, call, { messages, ackAll() {} }));
    },
    migrate: async () => {
      await (await standalone()).migrate();
      return { status: 'migrated' };
    },
  };
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}

const handlers = lambdaHandlers(process.env);
export const { handler, scheduled, deliveries, migrate } = handlers;
// Created only when Lambda's streaming runtime (the global awslambda) is there.
export const streamHandler = (globalThis as { awslambda?: unknown }).awslambda ? handlers.streamHandler() : undefined;

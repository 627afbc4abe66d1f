import type { FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '../../generated/openapi.js';

export type OperationId = keyof operations;

type Parameters<K extends OperationId> = operations[K]['parameters'];
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** The JSON body; `| undefined` when the document makes it optional. */
type RequestBody<K extends OperationId> = operations[K] extends { requestBody: infer R }
  ? JsonOf<R>
  : operations[K] extends { requestBody?: infer R }
    ? JsonOf<NonNullable<R>> | undefined
    : never;
type Responses<K extends OperationId> = operations[K]['responses'];
/** The JSON body of the operation's 2xx response(s); nothing for a 202 or 204. */
type SuccessBody<K extends OperationId> = {
  [S in keyof Responses<K>]: S extends 200 | 201 ? JsonOf<Responses<K>[S]> : S extends 202 | 204 ? void : never;
}[keyof Responses<K>];

/** A Fastify handler whose inputs and output are typed from the operation in openapi.yaml. */
export type OperationHandler<K extends OperationId> = (
  request: FastifyRequest<{
    Querystring: NonNullable<Parameters<K>['query']>;
    Params: NonNullable<Parameters<K>['path']>;
    Body: RequestBody<K>;
  }>,
  reply: FastifyReply,
) => Promise<SuccessBody<K>>;

/** One handler for each of these operations: a feature's map, checked with `satisfies`. */
export type HandlersFor<K extends OperationId> = { [P in K]: OperationHandler<P> };

/** One handler per operationId of the document: a missing one fails type-checking. */
export type OperationHandlers = HandlersFor<OperationId>;

/** The absolute URLs a feature's handlers hand out, built from openapi.yaml's paths: one resource (Location), a page of its list (Link). */
export interface ResourceUrls {
  item(id: number): string;
  list(query: string): string;
}

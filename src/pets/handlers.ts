import type { FastifyReply } from 'fastify';
import { noneMatchFails, strongEtag, weakEtag } from '../http/conditional.js';
import { idempotent } from '../idempotency/idempotent.js';
import type { HandlersFor, ResourceUrls } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import { FIRST_VERSION, petNotFound, type PetsRepository } from './repository.js';

/** 304 Not Modified: no body; the headers already set (ETag, rate limit, deprecation) stay. */
const notModified = (reply: FastifyReply) => reply.code(304).send() as never;

/** The pet operations by operationId; `satisfies` makes a missing one a type error. */
export function petHandlers({ pets, urls }: { pets: PetsRepository; urls: ResourceUrls }) {
  return {
    async listPets(request, reply) {
      const query = request.query as PageQuery & typeof request.query;
      const page = await pets.list({ limit: query.limit, status: query.status, categoryId: query.categoryId, afterId: pageStart(query) });
      linkNextPage(reply, urls.list, query, page);
      // Serialized once: the bytes are the weak ETag's input and the body (a string with its type set is sent as is).
      const body = JSON.stringify(page.rows);
      const etag = weakEtag(body);
      reply.header('etag', etag);
      if (noneMatchFails(request.headers['if-none-match'], etag)) return notModified(reply);
      return reply.type('application/json; charset=utf-8').send(body) as never;
    },

    async createPet(request, reply) {
      const { body: pet } = await idempotent(request, reply, 'createPet', 201, (key) => pets.create(request.body, request.apiKey!.accountId, key));
      reply.header('location', urls.item(pet.id));
      reply.header('etag', strongEtag(FIRST_VERSION));
      return pet;
    },

    // Deprecated: its Deprecation/Sunset/Link headers come from the operation's x-deprecation in openapi.yaml.
    async getPet(request, reply) {
      const found = await pets.get(request.params.petId);
      if (!found) throw petNotFound(request.params.petId);
      const etag = strongEtag(found.version);
      reply.header('etag', etag);
      if (noneMatchFails(request.headers['if-none-match'], etag)) return notModified(reply);
      return found.pet;
    },

    async updatePet(request, reply) {
      const { petId } = request.params;
      const ifMatch = request.headers['if-match'];
      const { body: pet, version } = await idempotent(request, reply, 'updatePet', 200, (key) => pets.update(petId, request.body, request.apiKey!.accountId, ifMatch, key));
      // A replay's ETag is the saved one (idempotent sets it).
      if (version !== undefined) reply.header('etag', strongEtag(version));
      return pet;
    },

    async deletePet(request, reply) {
      const { petId } = request.params;
      await idempotent(request, reply, 'deletePet', 204, (key) => pets.delete(petId, request.apiKey!.accountId, request.headers['if-match'], key));
    },
  } satisfies HandlersFor<'listPets' | 'createPet' | 'getPet' | 'updatePet' | 'deletePet'>;
}

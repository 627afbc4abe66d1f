<?php
// The sdk:check scenario through Redocly's generated PHP client (the file SDK_CLIENT names).
// Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX, SDK_CATEGORY, SDK_HOOK_URL, SDK_RECEIVED_URL; prints one `RESULT <step> ok|fail <detail>` line per step.
declare(strict_types=1);

require getenv('SDK_CLIENT');

use AnimalStoreApi\ApiError;
use AnimalStoreApi\Client;
use AnimalStoreApi\Config;
use AnimalStoreApi\EventType;
use AnimalStoreApi\NewOrder;
use AnimalStoreApi\NewApiKey;
use AnimalStoreApi\NewPet;
use AnimalStoreApi\NewWebhookEndpoint;
use AnimalStoreApi\OrderStatus;
use AnimalStoreApi\PetPatch;
use AnimalStoreApi\PetStatus;
use AnimalStoreApi\RollApiKey;
use AnimalStoreApi\Scope;
use AnimalStoreApi\WebhookEndpointStatus;

[$baseUrl, $key, $tinyKey, $prefix, $category] = array_map('getenv', ['SDK_BASE_URL', 'SDK_KEY', 'SDK_TINY_KEY', 'SDK_PREFIX', 'SDK_CATEGORY']);
$last = null; // the last response (set by the middleware), which ApiError does not carry: Retry-After is read from it
$lastRequest = null; // the last request as sent (its Content-Type)

function client(?string $apiKey): Client
{
    global $baseUrl;
    return new Client(new Config(
        serverUrl: $baseUrl,
        auth: $apiKey === null ? [] : ['bearer' => $apiKey],
        retry: ['attempts' => 1],
        middleware: [function (array $request, callable $next): array {
            $GLOBALS['lastRequest'] = $request;
            return $GLOBALS['last'] = $next($request);
        }],
    ));
}

function step(string $name, callable $run): void
{
    try {
        // Run first: `echo a, b()` prints a before b() runs, so a failing step would print "ok" ahead of its failure.
        $detail = $run();
        echo "RESULT $name ok $detail\n";
    } catch (\Throwable $err) {
        echo "RESULT $name fail ", get_class($err), ': ', preg_replace('/\s+/', ' ', $err->getMessage()), "\n";
    }
}

/** The API-Stability of the last response ('stable': none), which must be what openapi.yaml marks (SDK_STABILITY_*). */
function stability(string $operation): string
{
    $got = $GLOBALS['last']['headers']['api-stability'] ?? 'stable';
    $want = getenv('SDK_STABILITY_' . strtoupper($operation));
    check($got === $want, "$operation API-Stability: $got, openapi.yaml marks it $want");
    return "$operation $got";
}

function check(bool $condition, string $message): void
{
    if (!$condition) {
        throw new \RuntimeException($message);
    }
}

function expectError(int $status, string $code, callable $call): void
{
    try {
        $call();
    } catch (ApiError $err) {
        $got = is_array($err->body) ? ($err->body['code'] ?? null) : null;
        check($err->status === $status && $got === $code, "expected $status $code, got {$err->status} $got");
        return;
    }
    throw new \RuntimeException("expected $status $code, got a success");
}

$api = client($key);
$created = null;

step('list', function () use ($api, $prefix): string {
    for ($i = 0; $i < 7; $i++) {
        $api->createPet(new NewPet(name: "$prefix-$i", categoryId: 1));
    }
    $pages = 0;
    $mine = 0;
    foreach ($api->listPetsPages(limit: 2) as $page) {
        $pages++;
        foreach ($page as $pet) {
            $mine += str_starts_with($pet->name, "$prefix-") ? 1 : 0;
        }
    }
    check($mine === 7, "counted $mine of 7 pets over $pages pages");
    return "7 pets over $pages pages";
});

step('create', function () use ($api, $prefix, &$created): string {
    $body = new NewPet(name: "$prefix-replayed", categoryId: 2);
    $first = $api->createPetWithHeaders($body, null, "$prefix-key");
    $again = $api->createPetWithHeaders($body, null, "$prefix-key");
    check($first->data->id === $again->data->id, "replay made id {$again->data->id}, not {$first->data->id}");
    $replayed = $again->headers['idempotentReplayed'] ?? null;
    check($replayed === 'true', "Idempotent-Replayed: " . var_export($replayed, true));
    $created = $first->data->id;
    return "id $created replayed";
});

step('get', function () use ($api, &$created): string {
    check($created !== null, 'nothing created');
    $pet = $api->getPet($created);
    check($pet->id === $created, "got id {$pet->id}");
    return "id {$pet->id}";
});

step('errors', function () use ($api, $tinyKey): string {
    expectError(400, 'validation_failed', fn () => $api->createPet(new NewPet(name: '', categoryId: 1)));
    expectError(401, 'unauthorized', fn () => client(null)->listPets());
    expectError(404, 'pet_not_found', fn () => $api->getPet(999_999_999));
    $tiny = client($tinyKey);
    for ($i = 0; $i < 8; $i++) {
        try {
            $tiny->listPets(limit: 1);
        } catch (ApiError $err) {
            check($err->status === 429 && ($err->body['code'] ?? null) === 'rate_limited', "got {$err->status}");
            $retryAfter = $GLOBALS['last']['headers']['retry-after'] ?? null;
            check($retryAfter !== null && (int) $retryAfter > 0, 'Retry-After: ' . var_export($retryAfter, true));
            return "400 401 404 429 (Retry-After $retryAfter, via middleware)";
        }
    }
    throw new \RuntimeException('no 429 after 8 requests with the tiny-quota key');
});

$orders = [];

step('orders', function () use ($api, $prefix, &$orders): string {
    for ($i = 0; $i < 5; $i++) {
        $pet = $api->createPet(new NewPet(name: "$prefix-order-$i", categoryId: 1));
        $order = $api->placeOrder(new NewOrder(petId: $pet->id));
        check($order->status === OrderStatus::Placed && $order->petId === $pet->id, "placed order {$order->id}");
        $orders[] = $order;
    }
    $pages = 0;
    $listed = [];
    foreach ($api->listOrdersPages(limit: 2) as $page) {
        $pages++;
        foreach ($page as $order) {
            $listed[$order->id] = true;
        }
    }
    $seen = count(array_filter($orders, fn ($order) => isset($listed[$order->id])));
    check($seen === 5, "listed $seen of 5 orders over $pages pages");
    $got = $api->getOrderWithHeaders($orders[0]->id);
    check($got->data->petId === $orders[0]->petId && $got->data->status === OrderStatus::Placed, 'getOrder');
    $stability = $got->headers['apiStability'] ?? null;
    check($stability === 'experimental', 'API-Stability: ' . var_export($stability, true));
    check($api->completeOrder($orders[0]->id)->status === OrderStatus::Completed, 'completeOrder');
    check($api->cancelOrder($orders[1]->id)->status === OrderStatus::Cancelled, 'cancelOrder');
    $sold = $api->getPet($orders[0]->petId);
    check($sold->status === PetStatus::Sold, "pet of the completed order: {$sold->status->value}");
    return "5 placed, listed over $pages pages, get, complete, cancel (API-Stability $stability)";
});

step('conflicts', function () use ($api, &$orders): string {
    check(count($orders) === 5, 'no orders placed');
    expectError(409, 'pet_not_available', fn () => $api->placeOrder(new NewOrder(petId: $orders[2]->petId)));
    expectError(409, 'invalid_order_transition', fn () => $api->completeOrder($orders[1]->id));
    expectError(404, 'order_not_found', fn () => $api->getOrder(999_999_999));
    return '409 pet_not_available, 409 invalid_order_transition, 404 order_not_found';
});

// A key's secret as createApiKey and rollApiKey answer it: ask_, 30 random base62 characters and a 6-character checksum.
const SECRET = '/^ask_[0-9A-Za-z]{36}$/';

step('keys', function () use ($api, $prefix): string {
    $account = $api->getAccount();
    check($account->id > 0, "getAccount: {$account->id}");
    $accountStability = stability('getAccount');
    $made = $api->createApiKeyWithHeaders(new NewApiKey(name: "$prefix-reader", scopes: [Scope::PetsRead]));
    check($made->status === 201, "createApiKey: {$made->status}");
    $key = $made->data;
    check(preg_match(SECRET, $key->secret) === 1, "createApiKey secret is not an ask_ key (prefix {$key->prefix})");
    check($key->scopes === [Scope::PetsRead], 'createApiKey scopes: ' . implode(',', array_map(fn ($s) => $s->value, $key->scopes)));
    $reader = client($key->secret);
    expectError(403, 'insufficient_scope', fn () => $reader->createPet(new NewPet(name: "$prefix-refused", categoryId: 1)));
    $challenge = $GLOBALS['last']['headers']['www-authenticate'] ?? '';
    check(str_contains($challenge, 'scope="pets:write"'), "WWW-Authenticate: $challenge");
    $read = $reader->listPetsWithHeaders(limit: 1);
    check($read->status === 200, "listPets with the new key: {$read->status}");
    $roll = $api->rollApiKeyWithHeaders($key->id, new RollApiKey(expiresInSeconds: 60));
    check($roll->status === 201, "rollApiKey: {$roll->status}");
    $rolled = $roll->data;
    check(preg_match(SECRET, $rolled->secret) === 1 && $rolled->secret !== $key->secret, 'rollApiKey: the secret is not a new ask_ key');
    check($rolled->id !== $key->id && $rolled->name === $key->name && $rolled->scopes === $key->scopes, "rollApiKey: {$rolled->name}");
    $listed = [];
    foreach ($api->listApiKeysPages(limit: 100) as $page) {
        // The page as it came over the wire: ApiKey has no property a secret could land in.
        foreach (json_decode($GLOBALS['last']['body'], true, 512, JSON_THROW_ON_ERROR) as $item) {
            $listed[$item['id']] = $item;
        }
    }
    [$old, $fresh] = [$listed[$key->id] ?? null, $listed[$rolled->id] ?? null];
    check($old !== null && $fresh !== null, "listApiKeys: key {$key->id} " . ($old ? 'listed' : 'missing') . ", key {$rolled->id} " . ($fresh ? 'listed' : 'missing'));
    check(array_filter($listed, fn ($item) => array_key_exists('secret', $item)) === [], 'listApiKeys shows a secret');
    check(is_string($old['expiresAt']) && $fresh['expiresAt'] === null, 'expiresAt: old ' . var_export($old['expiresAt'], true) . ', new ' . var_export($fresh['expiresAt'], true));
    // The old key ends 60 s after the roll, to the second (both times are the server's).
    $overlap = (float) (new DateTimeImmutable($old['expiresAt']))->format('U.u') - (float) (new DateTimeImmutable($rolled->createdAt))->format('U.u');
    check(abs($overlap - 60) <= 1, "old key expires $overlap s after the roll");
    preg_match('/scope="[^"]*"/', $challenge, $scope);
    return "$accountStability; ask_ key 201, createPet 403 {$scope[0]}, listPets 200, roll 201 (60 s), listed";
});

// A strong entity tag (RFC 9110 §8.8.3): a quoted string with no W/ prefix.
const STRONG_ETAG = '/^"[^"]*"$/';

step('lifecycle', function () use ($api, $prefix, $category): string {
    $made = $api->createPetWithHeaders(new NewPet(name: "$prefix-life", categoryId: 3));
    $etag = $made->headers['etag'] ?? '';
    check($made->status === 201 && preg_match(STRONG_ETAG, $etag) === 1, "createPet: {$made->status}, ETag $etag");
    $id = $made->data->id;
    // The client has no If-None-Match or If-Match argument: they go in $headers. A 304 is not an
    // error to it: it hands the empty body (null) to Pet::fromArray(array), a TypeError.
    try {
        $api->getPetWithHeaders($id, ['If-None-Match' => $etag]);
        throw new \RuntimeException('getPet If-None-Match: a Pet, status ' . $GLOBALS['last']['status']);
    } catch (\TypeError) {
        $response = $GLOBALS['last'];
        check($response['status'] === 304 && $response['body'] === '', "getPet If-None-Match: {$response['status']}");
        check(($response['headers']['etag'] ?? null) === $etag, '304 ETag: ' . var_export($response['headers']['etag'] ?? null, true));
    }
    $name = "$prefix-renamed";
    $patched = $api->updatePetWithHeaders($id, new PetPatch(name: $name), ['If-Match' => $etag]);
    $mediaType = $GLOBALS['lastRequest']['headers']['Content-Type'] ?? '';
    check($patched->status === 200 && $patched->data->name === $name, "updatePet: {$patched->status} {$patched->data->name}");
    $newEtag = $patched->headers['etag'] ?? '';
    check(preg_match(STRONG_ETAG, $newEtag) === 1 && $newEtag !== $etag, "updatePet ETag: $newEtag after $etag");
    expectError(412, 'precondition_failed', fn () => $api->updatePet($id, new PetPatch(name: "$prefix-overwritten"), ['If-Match' => $etag]));
    $kept = $api->getPetWithHeaders($id);
    check($kept->data->name === $name && ($kept->headers['etag'] ?? null) === $newEtag, "after the 412: {$kept->data->name}");
    $deleted = $api->deletePetWithHeaders($id, ['If-Match' => $newEtag]);
    check($deleted->status === 204, "deletePet: {$deleted->status}");
    expectError(404, 'pet_not_found', fn () => $api->getPet($id));

    $categoryId = (int) $category;
    $mine = [];
    for ($i = 0; $i < 3; $i++) {
        $pet = $api->createPet(new NewPet(name: "$prefix-category-$i", categoryId: $categoryId));
        check($pet->categoryId === $categoryId, "created in category {$pet->categoryId}, not $categoryId");
        $mine[] = $pet->id;
    }
    $pages = 0;
    $seen = [];
    foreach ($api->listPetsPages(limit: 1, categoryId: $categoryId) as $page) {
        $pages++;
        foreach ($page as $pet) {
            $seen[] = $pet->id;
        }
    }
    check($seen === $mine, "category $categoryId: listed [" . implode(',', $seen) . '], made [' . implode(',', $mine) . ']');
    $shortType = preg_replace('#^application/#', '', $mediaType);
    return "304, PATCH $shortType {$etag}->{$newEtag}, 412, 204, 404; category: 3 of 3 in $pages pages";
});

// Standard Webhooks: v1, and the base64 HMAC-SHA256 of "id.timestamp.body", keyed with the base64-decoded secret after whsec_.
function signature(string $secret, string $content): string
{
    return 'v1,' . base64_encode(hash_hmac('sha256', $content, base64_decode(substr($secret, strlen('whsec_')), true), true));
}

step('webhooks', function () use ($api, $prefix): string {
    $made = $api->createWebhookEndpointWithHeaders(new NewWebhookEndpoint(url: getenv('SDK_HOOK_URL'), eventTypes: ['pet.created'], description: "$prefix sdk:check"));
    check($made->status === 201, "createWebhookEndpoint: {$made->status}");
    $endpointStability = stability('createWebhookEndpoint');
    $eventsStability = '';
    $endpoint = $made->data;
    check(str_starts_with($endpoint->secret, 'whsec_') && $endpoint->status === WebhookEndpointStatus::Enabled,
        'createWebhookEndpoint: secret ' . substr($endpoint->secret, 0, 6) . "..., status {$endpoint->status->value}");
    $pets = [];
    for ($i = 0; $i < 3; $i++) {
        $pets[] = $api->createPet(new NewPet(name: "$prefix-hook-$i", categoryId: 1))->id;
    }
    // Follows every page from the first (limit 1, the pager) until the three pet.created events are seen;
    // an event is listed once the transactions that began before it have ended, so a walk that misses
    // one starts again 2 s later (few enough walks to stay within the key's quota), for at most 30 s.
    $found = [];
    $pages = 0;
    for ($deadline = microtime(true) + 30; count($found) < count($pets); usleep(count($found) < count($pets) ? 2_000_000 : 0)) {
        check(microtime(true) < $deadline, 'listEvents: ' . count($found) . ' of ' . count($pets) . " pet.created events over $pages pages");
        $pages = 0;
        foreach ($api->listEventsPages(limit: 1) as $page) {
            $pages++;
            $eventsStability = stability('listEvents');
            foreach ($page as $event) {
                // data is untyped (mixed): the JSON object as an array, read by name.
                $id = $event->data['object']['id'] ?? null;
                if ($event->type === EventType::PetCreated && in_array($id, $pets, true)) {
                    $found[$id] = $event->id;
                }
            }
            if (count($found) === count($pets)) {
                break;
            }
        }
    }
    // Deliveries are listed newest first; the first page holds this endpoint's few attempts.
    $delivered = [];
    for ($deadline = microtime(true) + 20; count($delivered) < count($pets); usleep(250_000)) {
        check(microtime(true) < $deadline, 'listWebhookDeliveries: ' . count($delivered) . ' of ' . count($pets) . ' events delivered with 2xx');
        foreach ($api->listWebhookDeliveries($endpoint->id, limit: 100) as $attempt) {
            $status = $attempt->responseStatus;
            if ($status !== null && $status >= 200 && $status < 300 && in_array($attempt->eventId, $found, true)) {
                $delivered[$attempt->eventId] = $status;
            }
        }
    }
    $eventId = $found[$pets[0]];
    $got = @file_get_contents(getenv('SDK_RECEIVED_URL') . rawurlencode($eventId));
    check($got !== false, "the receiver has no request with webhook-id $eventId");
    $hook = json_decode($got, true, 512, JSON_THROW_ON_ERROR);
    $expected = signature($endpoint->secret, "{$hook['id']}.{$hook['timestamp']}.{$hook['body']}");
    check(in_array($expected, explode(' ', $hook['signature']), true), "webhook-signature {$hook['signature']} is not $expected");
    $sent = json_decode($hook['body'], true, 512, JSON_THROW_ON_ERROR);
    check($sent['id'] === $eventId && $sent['type'] === 'pet.created' && $sent['data']['object']['id'] === $pets[0], 'the body sent: ' . substr($hook['body'], 0, 80));
    $statuses = array_unique(array_values($delivered));
    sort($statuses);
    return "$endpointStability, $eventsStability; 201 whsec_; 3 pet.created in $pages pages of 1; 3 delivered " . implode(',', $statuses) . '; v1 signature verified';
});

<?php
// The sdk:check scenario through Redocly's generated PHP client (the file SDK_CLIENT names).
// Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX; prints one `RESULT <step> ok|fail <detail>` line per step.
declare(strict_types=1);

require getenv('SDK_CLIENT');

use AnimalStoreApi\ApiError;
use AnimalStoreApi\Client;
use AnimalStoreApi\Config;
use AnimalStoreApi\NewOrder;
use AnimalStoreApi\NewPet;
use AnimalStoreApi\OrderStatus;
use AnimalStoreApi\PetStatus;

[$baseUrl, $key, $tinyKey, $prefix] = array_map('getenv', ['SDK_BASE_URL', 'SDK_KEY', 'SDK_TINY_KEY', 'SDK_PREFIX']);
$last = null; // the last response (set by the middleware), which ApiError does not carry: Retry-After is read from it

function client(?string $apiKey): Client
{
    global $baseUrl;
    return new Client(new Config(
        serverUrl: $baseUrl,
        auth: $apiKey === null ? [] : ['bearer' => $apiKey],
        retry: ['attempts' => 1],
        middleware: [function (array $request, callable $next): array {
            return $GLOBALS['last'] = $next($request);
        }],
    ));
}

function step(string $name, callable $run): void
{
    try {
        echo "RESULT $name ok ", $run(), "\n";
    } catch (\Throwable $err) {
        echo "RESULT $name fail ", get_class($err), ': ', preg_replace('/\s+/', ' ', $err->getMessage()), "\n";
    }
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

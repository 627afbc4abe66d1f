"""The sdk:check scenario through Redocly's generated Python client (module `client` on PYTHONPATH).

Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX, SDK_CATEGORY, SDK_HOOK_URL, SDK_RECEIVED_URL; prints one `RESULT <step> ok|fail <detail>` line per step.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import time
from datetime import datetime

import httpx

import client as sdk

base_url, key, tiny_key, prefix, category = (os.environ[n] for n in ("SDK_BASE_URL", "SDK_KEY", "SDK_TINY_KEY", "SDK_PREFIX", "SDK_CATEGORY"))
last = {}  # the last response, which ApiError does not carry: Retry-After is read from it


def remember(response, _context):
    last["response"] = response


def client(api_key=None):
    auth = {"bearer": api_key} if api_key else {}
    return sdk.Client(base_url, auth=auth, retry={"retries": 0}, middleware=[{"on_response": remember}])


api = client(key)


def step(name, run):
    try:
        print(f"RESULT {name} ok {run()}", flush=True)
    except Exception as err:  # noqa: BLE001 - every failure is a cell of the table
        print(f"RESULT {name} fail {type(err).__name__}: {' '.join(str(err).split())}", flush=True)


def stability(operation, response):
    """The API-Stability the response carries ("stable": none), which must be what openapi.yaml marks (SDK_STABILITY_*)."""
    got, want = response.headers.get("API-Stability", "stable"), os.environ["SDK_STABILITY_" + operation.upper()]
    check(got == want, f"{operation} API-Stability: {got}, openapi.yaml marks it {want}")
    return f"{operation} {got}"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def list_pages():
    for i in range(7):
        api.create_pet(sdk.NewPet(name=f"{prefix}-{i}", category_id=1))
    pages = 0
    mine = 0
    for page in api.list_pets_pages(limit=2):
        pages += 1
        mine += sum(1 for pet in page if pet.name.startswith(f"{prefix}-"))
    check(mine == 7, f"counted {mine} of 7 pets over {pages} pages")
    return f"7 pets over {pages} pages"


created = {}


def create_replay():
    body = sdk.NewPet(name=f"{prefix}-replayed", category_id=2)
    first = api.create_pet_with_headers(body, idempotency_key=f"{prefix}-key")
    again = api.create_pet_with_headers(body, idempotency_key=f"{prefix}-key")
    check(first.data.id == again.data.id, f"replay made id {again.data.id}, not {first.data.id}")
    replayed = again.headers.get("idempotent_replayed")
    check(replayed == "true", f"Idempotent-Replayed: {replayed}")
    created["id"] = first.data.id
    return f"id {first.data.id} replayed"


def get():
    check("id" in created, "nothing created")
    pet = api.get_pet(created["id"])
    check(pet.id == created["id"], f"got id {pet.id}")
    return f"id {pet.id}"


def expect_error(status, code, call):
    try:
        call()
    except sdk.ApiError as err:
        got = err.body.get("code") if isinstance(err.body, dict) else None
        check(err.status == status and got == code, f"expected {status} {code}, got {err.status} {got}")
        return err
    raise AssertionError(f"expected {status} {code}, got a success")


def expect_status(status, call):
    """The ApiError of a call that must fail with this status, whatever its body."""
    try:
        call()
    except sdk.ApiError as err:
        check(err.status == status, f"expected {status}, got {err.status}")
        return err
    raise AssertionError(f"expected {status}, got a success")


def errors():
    expect_error(400, "validation_failed", lambda: api.create_pet(sdk.NewPet(name="", category_id=1)))
    expect_error(401, "unauthorized", lambda: client().list_pets())
    expect_error(404, "pet_not_found", lambda: api.get_pet(999_999_999))
    tiny = client(tiny_key)
    for _ in range(8):
        try:
            tiny.list_pets(limit=1)
        except sdk.ApiError as err:
            check(err.status == 429 and err.body.get("code") == "rate_limited", f"got {err.status} {err.body}")
            retry_after = last["response"].headers.get("Retry-After")
            check(retry_after and int(retry_after) > 0, f"Retry-After: {retry_after}")
            return f"400 401 404 429 (Retry-After {retry_after}, via middleware)"
    raise AssertionError("no 429 after 8 requests with the tiny-quota key")


orders = []


def place_list_change():
    for i in range(5):
        pet = api.create_pet(sdk.NewPet(name=f"{prefix}-order-{i}", category_id=1))
        order = api.place_order(sdk.NewOrder(pet_id=pet.id))
        check(order.status == "placed" and order.pet_id == pet.id, f"placed {order}")
        orders.append(order)
    pages = 0
    listed = set()
    for page in api.list_orders_pages(limit=2):
        pages += 1
        listed.update(order.id for order in page)
    seen = sum(1 for order in orders if order.id in listed)
    check(seen == 5, f"listed {seen} of 5 orders over {pages} pages")
    got = api.get_order_with_headers(orders[0].id)
    check(got.data.pet_id == orders[0].pet_id and got.data.status == "placed", f"getOrder: {got.data}")
    stability = got.headers.get("api_stability")
    check(stability == "experimental", f"API-Stability: {stability}")
    check(api.complete_order(orders[0].id).status == "completed", "completeOrder")
    check(api.cancel_order(orders[1].id).status == "cancelled", "cancelOrder")
    sold = api.get_pet(orders[0].pet_id)
    check(sold.status == "sold", f"pet of the completed order: {sold.status}")
    return f"5 placed, listed over {pages} pages, get, complete, cancel (API-Stability {stability})"


def conflicts():
    check(len(orders) == 5, "no orders placed")
    expect_error(409, "pet_not_available", lambda: api.place_order(sdk.NewOrder(pet_id=orders[2].pet_id)))
    expect_error(409, "invalid_order_transition", lambda: api.complete_order(orders[1].id))
    expect_error(404, "order_not_found", lambda: api.get_order(999_999_999))
    return "409 pet_not_available, 409 invalid_order_transition, 404 order_not_found"


step("list", list_pages)
step("create", create_replay)
step("get", get)
step("errors", errors)
step("orders", place_list_change)


# A key's secret as create_api_key and roll_api_key answer it: ask_, 30 random base62 characters and a 6-character checksum.
SECRET = re.compile(r"^ask_[0-9A-Za-z]{36}$")


def keys():
    account = api.get_account()
    check(account.id > 0, f"getAccount: {account}")
    account_stability = stability("getAccount", last["response"])
    made = api.create_api_key_with_headers(sdk.NewApiKey(name=f"{prefix}-reader", scopes=[sdk.Scope.PETS_READ]))
    check(made.response.status_code == 201, f"createApiKey: {made.response.status_code}")
    check(SECRET.match(made.data.secret), f"createApiKey secret is not an ask_ key (prefix {made.data.prefix})")
    check(made.data.scopes == [sdk.Scope.PETS_READ], f"createApiKey scopes: {made.data.scopes}")
    reader = client(made.data.secret)
    expect_error(403, "insufficient_scope", lambda: reader.create_pet(sdk.NewPet(name=f"{prefix}-refused", category_id=1)))
    challenge = last["response"].headers.get("WWW-Authenticate", "")
    check('scope="pets:write"' in challenge, f"WWW-Authenticate: {challenge}")
    read = reader.list_pets_with_headers(limit=1)
    check(read.response.status_code == 200, f"listPets with the new key: {read.response.status_code}")
    rolled = api.roll_api_key_with_headers(made.data.id, sdk.RollApiKey(expires_in_seconds=60))
    check(rolled.response.status_code == 201, f"rollApiKey: {rolled.response.status_code}")
    check(SECRET.match(rolled.data.secret) and rolled.data.secret != made.data.secret, "rollApiKey: the secret is not a new ask_ key")
    check(rolled.data.id != made.data.id and rolled.data.name == made.data.name and rolled.data.scopes == made.data.scopes,
          f"rollApiKey: {rolled.data.name} {rolled.data.scopes}")
    listed = {}
    for _ in api.list_api_keys_pages(limit=100):
        # The pager decodes into ApiKey, which has no secret: read each page as it came over the wire.
        for item in last["response"].json():
            listed[item["id"]] = item
    old, fresh = listed.get(made.data.id), listed.get(rolled.data.id)
    check(old and fresh, f"listApiKeys: key {made.data.id} {'listed' if old else 'missing'}, key {rolled.data.id} {'listed' if fresh else 'missing'}")
    check(all("secret" not in item for item in listed.values()), "listApiKeys shows a secret")
    check(old["expiresAt"] is not None and fresh["expiresAt"] is None, f"expiresAt: old {old['expiresAt']}, new {fresh['expiresAt']}")
    # The old key ends 60 s after the roll, to the second (both times are the server's).
    overlap = (datetime.fromisoformat(old["expiresAt"]) - datetime.fromisoformat(rolled.data.created_at)).total_seconds()
    check(abs(overlap - 60) <= 1, f"old key expires {overlap} s after the roll")
    scope = re.search(r'scope="[^"]*"', challenge).group(0)
    return f"{account_stability}; ask_ key 201, createPet 403 {scope}, listPets 200, roll 201 (60 s), listed"


hook_url, received_url = os.environ["SDK_HOOK_URL"], os.environ["SDK_RECEIVED_URL"]


def signature(secret, content):
    """Standard Webhooks: v1, and the base64 HMAC-SHA256 of "id.timestamp.body", keyed with the base64-decoded secret after whsec_."""
    digest = hmac.new(base64.b64decode(secret[len("whsec_"):]), content.encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def webhooks():
    made = api.create_webhook_endpoint_with_headers(
        sdk.NewWebhookEndpoint(url=hook_url, event_types=["pet.created"], description=f"{prefix} sdk:check"))
    check(made.response.status_code == 201, f"createWebhookEndpoint: {made.response.status_code}")
    endpoint = made.data
    endpoint_stability = stability("createWebhookEndpoint", made.response)
    check(endpoint.secret.startswith("whsec_") and endpoint.status == sdk.WebhookEndpointStatus.ENABLED,
          f"createWebhookEndpoint: secret {endpoint.secret[:6]}..., status {endpoint.status}")
    pets = [api.create_pet(sdk.NewPet(name=f"{prefix}-hook-{i}", category_id=1)).id for i in range(3)]
    # Follows every page from the first (limit 1, the pager) until the three pet.created events are seen;
    # an event is listed once the transactions that began before it have ended, so a walk that misses
    # one starts again 2 s later (few enough walks to stay within the key's quota), for at most 30 s.
    found = {}
    deadline = time.monotonic() + 30
    while True:
        pages = 0
        for page in api.list_events_pages(limit=1):
            pages += 1
            for event in page:
                # data is untyped (Any): the JSON object, read by name.
                if event.type_ == sdk.EventType.PET_CREATED and event.data["object"]["id"] in pets:
                    found[event.data["object"]["id"]] = event.id
            if len(found) == len(pets):
                break
        if len(found) == len(pets):
            events_stability = stability("listEvents", last["response"])
            break
        check(time.monotonic() < deadline, f"listEvents: {len(found)} of {len(pets)} pet.created events over {pages} pages")
        time.sleep(2)
    # Deliveries are listed newest first; the first page holds this endpoint's few attempts.
    delivered = {}
    deadline = time.monotonic() + 20
    while len(delivered) < len(pets):
        check(time.monotonic() < deadline, f"listWebhookDeliveries: {len(delivered)} of {len(pets)} events delivered with 2xx")
        for attempt in api.list_webhook_deliveries(endpoint.id, limit=100):
            if attempt.response_status is not None and 200 <= attempt.response_status < 300 and attempt.event_id in found.values():
                delivered[attempt.event_id] = attempt.response_status
        if len(delivered) < len(pets):
            time.sleep(0.25)
    event_id = found[pets[0]]
    got = httpx.get(received_url + event_id)
    check(got.status_code == 200, f"the receiver has no request with webhook-id {event_id}")
    hook = got.json()
    expected = signature(endpoint.secret, f"{hook['id']}.{hook['timestamp']}.{hook['body']}")
    check(expected in hook["signature"].split(" "), f"webhook-signature {hook['signature']} is not {expected}")
    sent = json.loads(hook["body"])
    check(sent["id"] == event_id and sent["type"] == "pet.created" and sent["data"]["object"]["id"] == pets[0],
          f"the body sent: {hook['body'][:80]}")
    statuses = ",".join(str(s) for s in sorted(set(delivered.values())))
    return (f"{endpoint_stability}, {events_stability}; 201 whsec_; 3 pet.created in {pages} pages of 1; "
            f"3 delivered {statuses}; v1 signature verified")


step("conflicts", conflicts)
step("keys", keys)


# A strong entity tag (RFC 9110 section 8.8.3): a quoted string with no W/ prefix.
STRONG_ETAG = re.compile(r'^"[^"]*"$')


def lifecycle():
    made = api.create_pet_with_headers(sdk.NewPet(name=f"{prefix}-life", category_id=3))
    check(made.response.status_code == 201, f"createPet: {made.response.status_code}")
    pet_id, etag = made.data.id, made.headers.get("etag") or ""
    check(STRONG_ETAG.match(etag), f"createPet ETag: {etag}")
    # The client has no If-None-Match or If-Match argument: they go in headers=. A 304 is not a
    # success to httpx, so it comes as ApiError with no body.
    not_modified = expect_status(304, lambda: api.get_pet_with_headers(pet_id, headers={"If-None-Match": etag}))
    check(not_modified.body is None and last["response"].content == b"", f"304 body: {last['response'].content!r}")
    check(last["response"].headers.get("ETag") == etag, f"304 ETag: {last['response'].headers.get('ETag')}")
    name = f"{prefix}-renamed"
    patched = api.update_pet_with_headers(pet_id, sdk.PetPatch(name=name), headers={"If-Match": etag})
    media_type = patched.response.request.headers.get("Content-Type")
    check(patched.response.status_code == 200 and patched.data.name == name, f"updatePet: {patched.response.status_code} {patched.data.name}")
    new_etag = patched.headers.get("etag") or ""
    check(STRONG_ETAG.match(new_etag) and new_etag != etag, f"updatePet ETag: {new_etag} after {etag}")
    expect_error(412, "precondition_failed", lambda: api.update_pet(pet_id, sdk.PetPatch(name=f"{prefix}-overwritten"), headers={"If-Match": etag}))
    kept = api.get_pet_with_headers(pet_id)
    check(kept.data.name == name and kept.headers.get("etag") == new_etag, f"after the 412: {kept.data.name} {kept.headers.get('etag')}")
    deleted = api.delete_pet_with_headers(pet_id, headers={"If-Match": new_etag})
    check(deleted.response.status_code == 204, f"deletePet: {deleted.response.status_code}")
    expect_error(404, "pet_not_found", lambda: api.get_pet(pet_id))

    category_id = int(category)
    mine = [api.create_pet(sdk.NewPet(name=f"{prefix}-category-{i}", category_id=category_id)) for i in range(3)]
    check(all(pet.category_id == category_id for pet in mine), f"created in categories {[pet.category_id for pet in mine]}")
    pages = 0
    seen = []
    for page in api.list_pets_pages(limit=1, category_id=category_id):
        pages += 1
        seen.extend(pet.id for pet in page)
    made_ids = [pet.id for pet in mine]
    check(seen == made_ids, f"category {category_id}: listed {seen}, made {made_ids}")
    return f"304, PATCH {media_type.removeprefix('application/')} {etag}->{new_etag}, 412, 204, 404; category: 3 of 3 in {pages} pages"


step("lifecycle", lifecycle)
step("webhooks", webhooks)

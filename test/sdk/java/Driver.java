// The sdk:check scenario through Redocly's generated Java client (animalstoreapi.Client).
// Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX, SDK_CATEGORY, SDK_HOOK_URL, SDK_RECEIVED_URL; prints one `RESULT <step> ok|fail <detail>` line per step.
import animalstoreapi.Client;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSession;

public class Driver {
    static final String PREFIX = System.getenv("SDK_PREFIX");
    /** The last response, which ApiException does not carry: Retry-After is read from it. */
    static HttpResponse<InputStream> last;
    /** Its body as it came over the wire (the typed results drop what they do not declare). */
    static byte[] lastBody;
    static Long created;
    /** A key's secret as createApiKey and rollApiKey answer it: ask_, 30 random base62 characters and a 6-character checksum. */
    static final Pattern SECRET = Pattern.compile("^ask_[0-9A-Za-z]{36}$");
    static final List<Client.Order> orders = new ArrayList<>();
    /** A strong entity tag (RFC 9110 §8.8.3): a quoted string with no W/ prefix. */
    static final Pattern STRONG_ETAG = Pattern.compile("^\"[^\"]*\"$");

    /**
     * The client's HttpClient, keeping a copy of each response body in lastBody: a middleware
     * sees the body only as a stream the client still has to read.
     */
    static final class Recording extends HttpClient {
        final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

        @Override
        @SuppressWarnings("unchecked")
        public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) throws IOException, InterruptedException {
            HttpResponse<T> response = http.send(request, handler);
            if (!(response.body() instanceof InputStream stream)) return response;
            byte[] body;
            try (stream) {
                body = stream.readAllBytes();
            }
            lastBody = body;
            return new HttpResponse<>() {
                public int statusCode() { return response.statusCode(); }
                public HttpRequest request() { return response.request(); }
                public Optional<HttpResponse<T>> previousResponse() { return response.previousResponse(); }
                public HttpHeaders headers() { return response.headers(); }
                public T body() { return (T) new ByteArrayInputStream(body); }
                public Optional<SSLSession> sslSession() { return response.sslSession(); }
                public URI uri() { return response.uri(); }
                public HttpClient.Version version() { return response.version(); }
            };
        }

        @Override
        public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
            throw new UnsupportedOperationException("the generated client sends synchronously");
        }

        @Override
        public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler, HttpResponse.PushPromiseHandler<T> push) {
            throw new UnsupportedOperationException("the generated client sends synchronously");
        }

        public Optional<CookieHandler> cookieHandler() { return http.cookieHandler(); }
        public Optional<Duration> connectTimeout() { return http.connectTimeout(); }
        public HttpClient.Redirect followRedirects() { return http.followRedirects(); }
        public Optional<ProxySelector> proxy() { return http.proxy(); }
        public SSLContext sslContext() { return http.sslContext(); }
        public SSLParameters sslParameters() { return http.sslParameters(); }
        public Optional<Authenticator> authenticator() { return http.authenticator(); }
        public HttpClient.Version version() { return http.version(); }
        public Optional<Executor> executor() { return http.executor(); }
    }

    static Client client(String apiKey, String idempotencyKey) {
        return new Client(config(apiKey, idempotencyKey));
    }

    /**
     * A client of SDK_KEY sending one more header: the Java client takes request headers per
     * client (Config.header), and has no If-Match or If-None-Match argument.
     */
    static Client withHeader(String name, String value) {
        return new Client(config(System.getenv("SDK_KEY"), null).header(name, value));
    }

    static Client.Config config(String apiKey, String idempotencyKey) {
        Client.Config config = new Client.Config()
            .serverUrl(System.getenv("SDK_BASE_URL"))
            .httpClient(new Recording())
            .retry(new Client.Retry().retries(0))
            .middleware(new Client.Middleware() {
                @Override
                public void onResponse(HttpResponse<InputStream> response) {
                    last = response;
                }
            });
        if (apiKey != null) config.auth(new Client.Auth().bearer(apiKey));
        if (idempotencyKey != null) config.idempotencyKey(() -> idempotencyKey);
        return config;
    }

    static void step(String name, Callable<String> run) {
        try {
            System.out.println("RESULT " + name + " ok " + run.call());
        } catch (Exception err) {
            System.out.println("RESULT " + name + " fail " + err.getClass().getSimpleName() + ": " + String.valueOf(err.getMessage()).replaceAll("\\s+", " "));
        }
    }

    /** The API-Stability of the last response ("stable": none), which must be what openapi.yaml marks (SDK_STABILITY_*). */
    static String stability(String operation) {
        String got = last.headers().firstValue("API-Stability").orElse("stable");
        String want = System.getenv("SDK_STABILITY_" + operation.toUpperCase());
        check(got.equals(want), operation + " API-Stability: " + got + ", openapi.yaml marks it " + want);
        return operation + " " + got;
    }

    static void check(boolean condition, String message) {
        if (!condition) throw new IllegalStateException(message);
    }

    static void expectError(int status, String code, Runnable call) {
        try {
            call.run();
        } catch (Client.ApiException err) {
            Object got = err.body instanceof Map<?, ?> body ? body.get("code") : null;
            check(err.status == status && code.equals(got), "expected " + status + " " + code + ", got " + err.status + " " + got);
            return;
        }
        throw new IllegalStateException("expected " + status + " " + code + ", got a success");
    }

    /** data.object.id of an event: data is untyped (an Object, the parsed JSON map), and the component is named data2() (the generated fromJson has a local named data). */
    static long objectId(Object data) {
        Object object = data instanceof Map<?, ?> fields ? fields.get("object") : null;
        Object id = object instanceof Map<?, ?> fields ? fields.get("id") : null;
        return id instanceof Number number ? number.longValue() : -1;
    }

    /** Standard Webhooks: v1, and the base64 HMAC-SHA256 of "id.timestamp.body", keyed with the base64-decoded secret after whsec_. */
    static String signature(String secret, String content) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.substring("whsec_".length())), "HmacSHA256"));
        return "v1," + Base64.getEncoder().encodeToString(mac.doFinal(content.getBytes(StandardCharsets.UTF_8)));
    }

    static String webhooks(Client api) throws Exception {
        var made = api.createWebhookEndpointWithHeaders(new Client.NewWebhookEndpoint(System.getenv("SDK_HOOK_URL"), List.of("pet.created"), PREFIX + " sdk:check"));
        check(made.status() == 201, "createWebhookEndpoint: " + made.status());
        String endpointStability = stability("createWebhookEndpoint");
        String eventsStability = "";
        var endpoint = made.data();
        check(endpoint.secret().startsWith("whsec_") && endpoint.status() == Client.WebhookEndpointStatus.ENABLED,
            "createWebhookEndpoint: secret " + endpoint.secret().substring(0, 6) + "..., status " + endpoint.status());
        List<Long> pets = new ArrayList<>();
        for (int i = 0; i < 3; i++) pets.add(api.createPet(new Client.NewPet(PREFIX + "-hook-" + i, 1L, null)).id());
        // Follows every page from the first (limit 1, the pager) until the three pet.created events are seen;
        // an event is listed once the transactions that began before it have ended, so a walk that misses
        // one starts again 2 s later (few enough walks to stay within the key's quota), for at most 30 s.
        Map<Long, String> found = new HashMap<>();
        int pages = 0;
        for (long deadline = System.nanoTime() + 30_000_000_000L; found.size() < pets.size(); Thread.sleep(found.size() < pets.size() ? 2000 : 0)) {
            check(System.nanoTime() < deadline, "listEvents: " + found.size() + " of " + pets.size() + " pet.created events over " + pages + " pages");
            pages = 0;
            for (var page : api.listEventsPages(new Client.ListEventsParams().limit(1L))) {
                pages++;
                eventsStability = stability("listEvents");
                for (var event : page) {
                    long id = objectId(event.data2());
                    if (event.type() == Client.EventType.PET_CREATED && pets.contains(id)) found.put(id, event.id());
                }
                if (found.size() == pets.size()) break;
            }
        }
        // Deliveries are listed newest first; the first page holds this endpoint's few attempts.
        Map<String, Long> delivered = new HashMap<>();
        for (long deadline = System.nanoTime() + 20_000_000_000L; delivered.size() < pets.size(); Thread.sleep(250)) {
            check(System.nanoTime() < deadline, "listWebhookDeliveries: " + delivered.size() + " of " + pets.size() + " events delivered with 2xx");
            for (var attempt : api.listWebhookDeliveries(endpoint.id(), new Client.ListWebhookDeliveriesParams().limit(100L))) {
                Long status = attempt.responseStatus();
                if (status != null && status >= 200 && status < 300 && found.containsValue(attempt.eventId())) delivered.put(attempt.eventId(), status);
            }
        }
        String eventId = found.get(pets.get(0));
        HttpResponse<String> got = HttpClient.newHttpClient().send(
            HttpRequest.newBuilder(URI.create(System.getenv("SDK_RECEIVED_URL") + eventId)).build(), HttpResponse.BodyHandlers.ofString());
        check(got.statusCode() == 200, "the receiver has no request with webhook-id " + eventId);
        Map<?, ?> hook = (Map<?, ?>) Client.Json.parse(got.body());
        String expected = signature(endpoint.secret(), hook.get("id") + "." + hook.get("timestamp") + "." + hook.get("body"));
        check(List.of(((String) hook.get("signature")).split(" ")).contains(expected), "webhook-signature " + hook.get("signature") + " is not " + expected);
        var sent = Client.Event.fromJson(Client.Json.parse((String) hook.get("body")));
        check(sent.id().equals(eventId) && sent.type() == Client.EventType.PET_CREATED && objectId(sent.data2()) == pets.get(0), "the body sent: " + hook.get("body"));
        String statuses = String.join(",", new java.util.TreeSet<>(delivered.values()).stream().map(String::valueOf).toList());
        return endpointStability + ", " + eventsStability + "; 201 whsec_; 3 pet.created in " + pages + " pages of 1; 3 delivered " + statuses + "; v1 signature verified";
    }

    public static void main(String[] args) {
        Client api = client(System.getenv("SDK_KEY"), null);

        step("list", () -> {
            for (int i = 0; i < 7; i++) api.createPet(new Client.NewPet(PREFIX + "-" + i, 1L, null));
            int pages = 0, mine = 0;
            for (var page : api.listPetsPages(new Client.ListPetsParams().limit(2L))) {
                pages++;
                for (var pet : page) if (pet.name().startsWith(PREFIX + "-")) mine++;
            }
            check(mine == 7, "counted " + mine + " of 7 pets over " + pages + " pages");
            return "7 pets over " + pages + " pages";
        });

        step("create", () -> {
            Client replaying = client(System.getenv("SDK_KEY"), PREFIX + "-key");
            var body = new Client.NewPet(PREFIX + "-replayed", 2L, null);
            var first = replaying.createPetWithHeaders(body);
            var again = replaying.createPetWithHeaders(body);
            check(first.data().id().equals(again.data().id()), "replay made id " + again.data().id() + ", not " + first.data().id());
            Object replayed = again.headers().get("idempotentReplayed");
            check("true".equals(replayed), "Idempotent-Replayed: " + replayed);
            created = first.data().id();
            return "id " + created + " replayed";
        });

        step("get", () -> {
            check(created != null, "nothing created");
            var pet = api.getPet(created);
            check(created.equals(pet.id()), "got id " + pet.id());
            return "id " + pet.id();
        });

        step("errors", () -> {
            expectError(400, "validation_failed", () -> api.createPet(new Client.NewPet("", 1L, null)));
            expectError(401, "unauthorized", () -> client(null, null).listPets(null));
            expectError(404, "pet_not_found", () -> api.getPet(999_999_999L));
            Client tiny = client(System.getenv("SDK_TINY_KEY"), null);
            for (int i = 0; i < 8; i++) {
                try {
                    tiny.listPets(new Client.ListPetsParams().limit(1L));
                } catch (Client.ApiException err) {
                    Object code = err.body instanceof Map<?, ?> body ? body.get("code") : null;
                    check(err.status == 429 && "rate_limited".equals(code), "got " + err.status + " " + code);
                    String retryAfter = last.headers().firstValue("Retry-After").orElse("");
                    check(!retryAfter.isEmpty() && Integer.parseInt(retryAfter) > 0, "Retry-After: " + retryAfter);
                    return "400 401 404 429 (Retry-After " + retryAfter + ", via middleware)";
                }
            }
            throw new IllegalStateException("no 429 after 8 requests with the tiny-quota key");
        });

        step("orders", () -> {
            for (int i = 0; i < 5; i++) {
                var pet = api.createPet(new Client.NewPet(PREFIX + "-order-" + i, 1L, null));
                var order = api.placeOrder(new Client.NewOrder(pet.id()));
                check(order.status() == Client.OrderStatus.PLACED && order.petId().equals(pet.id()), "placed " + order);
                orders.add(order);
            }
            int pages = 0;
            Set<Long> listed = new HashSet<>();
            for (var page : api.listOrdersPages(new Client.ListOrdersParams().limit(2L))) {
                pages++;
                for (var order : page) listed.add(order.id());
            }
            long seen = orders.stream().filter(o -> listed.contains(o.id())).count();
            check(seen == 5, "listed " + seen + " of 5 orders over " + pages + " pages");
            var got = api.getOrderWithHeaders(orders.get(0).id());
            check(got.data().petId().equals(orders.get(0).petId()) && got.data().status() == Client.OrderStatus.PLACED, "getOrder: " + got.data());
            Object stability = got.headers().get("apiStability");
            check("experimental".equals(stability), "API-Stability: " + stability);
            check(api.completeOrder(orders.get(0).id()).status() == Client.OrderStatus.COMPLETED, "completeOrder");
            check(api.cancelOrder(orders.get(1).id()).status() == Client.OrderStatus.CANCELLED, "cancelOrder");
            var sold = api.getPet(orders.get(0).petId());
            check(sold.status() == Client.PetStatus.SOLD, "pet of the completed order: " + sold.status());
            return "5 placed, listed over " + pages + " pages, get, complete, cancel (API-Stability " + stability + ")";
        });

        step("conflicts", () -> {
            check(orders.size() == 5, "no orders placed");
            expectError(409, "pet_not_available", () -> api.placeOrder(new Client.NewOrder(orders.get(2).petId())));
            expectError(409, "invalid_order_transition", () -> api.completeOrder(orders.get(1).id()));
            expectError(404, "order_not_found", () -> api.getOrder(999_999_999L));
            return "409 pet_not_available, 409 invalid_order_transition, 404 order_not_found";
        });

        step("keys", () -> {
            var account = api.getAccount();
            check(account.id() > 0, "getAccount: " + account);
            String accountStability = stability("getAccount");
            var made = api.createApiKeyWithHeaders(new Client.NewApiKey(PREFIX + "-reader", List.of(Client.Scope.PETS_READ), null));
            check(made.status() == 201, "createApiKey: " + made.status());
            var key = made.data();
            check(SECRET.matcher(key.secret()).matches(), "createApiKey secret is not an ask_ key (prefix " + key.prefix() + ")");
            check(key.scopes().equals(List.of(Client.Scope.PETS_READ)), "createApiKey scopes: " + key.scopes());
            Client reader = client(key.secret(), null);
            expectError(403, "insufficient_scope", () -> reader.createPet(new Client.NewPet(PREFIX + "-refused", 1L, null)));
            String challenge = last.headers().firstValue("WWW-Authenticate").orElse("");
            check(challenge.contains("scope=\"pets:write\""), "WWW-Authenticate: " + challenge);
            var read = reader.listPetsWithHeaders(new Client.ListPetsParams().limit(1L));
            check(read.status() == 200, "listPets with the new key: " + read.status());
            var roll = api.rollApiKeyWithHeaders(key.id(), new Client.RollApiKey(60L));
            check(roll.status() == 201, "rollApiKey: " + roll.status());
            var rolled = roll.data();
            check(SECRET.matcher(rolled.secret()).matches() && !rolled.secret().equals(key.secret()), "rollApiKey: the secret is not a new ask_ key");
            check(!rolled.id().equals(key.id()) && rolled.name().equals(key.name()) && rolled.scopes().equals(key.scopes()), "rollApiKey: " + rolled.name() + " " + rolled.scopes());
            Map<Long, Map<?, ?>> listed = new HashMap<>();
            for (var page : api.listApiKeysPages(new Client.ListApiKeysParams().limit(100L))) {
                // The page as it came over the wire: ApiKey has no component a secret could land in.
                for (Object item : (List<?>) Client.Json.parse(new String(lastBody, StandardCharsets.UTF_8))) {
                    Map<?, ?> fields = (Map<?, ?>) item;
                    listed.put(((Number) fields.get("id")).longValue(), fields);
                }
            }
            Map<?, ?> old = listed.get(key.id()), fresh = listed.get(rolled.id());
            check(old != null && fresh != null, "listApiKeys: key " + key.id() + " listed " + (old != null) + ", key " + rolled.id() + " listed " + (fresh != null));
            check(listed.values().stream().noneMatch(item -> item.containsKey("secret")), "listApiKeys shows a secret");
            check(old.get("expiresAt") instanceof String && fresh.get("expiresAt") == null, "expiresAt: old " + old.get("expiresAt") + ", new " + fresh.get("expiresAt"));
            // The old key ends 60 s after the roll, to the second (both times are the server's).
            long overlap = Duration.between(Instant.parse(rolled.createdAt()), Instant.parse((String) old.get("expiresAt"))).toMillis();
            check(Math.abs(overlap - 60_000) <= 1000, "old key expires " + overlap + " ms after the roll");
            Matcher scope = Pattern.compile("scope=\"[^\"]*\"").matcher(challenge);
            check(scope.find(), "WWW-Authenticate: " + challenge);
            return accountStability + "; ask_ key 201, createPet 403 " + scope.group() + ", listPets 200, roll 201 (60 s), listed";
        });
            step("lifecycle", () -> {
            var made = api.createPetWithHeaders(new Client.NewPet(PREFIX + "-life", 3L, null));
            Object etag = made.headers().get("etag");
            check(made.status() == 201 && etag instanceof String tag && STRONG_ETAG.matcher(tag).matches(), "createPet: " + made.status() + ", ETag " + etag);
            Long id = made.data().id();
            // A 304 is not an error to the Java client: an Envelope with status 304 and no data.
            var unchanged = withHeader("If-None-Match", (String) etag).getPetWithHeaders(id);
            check(unchanged.status() == 304 && unchanged.data() == null && lastBody.length == 0, "getPet If-None-Match: " + unchanged.status() + " " + unchanged.data());
            check(etag.equals(unchanged.headers().get("etag")), "304 ETag: " + unchanged.headers().get("etag"));
            String name = PREFIX + "-renamed";
            var patched = withHeader("If-Match", (String) etag).updatePetWithHeaders(id, new Client.PetPatch(name, null, null));
            String mediaType = last.request().headers().firstValue("Content-Type").orElse("");
            check(patched.status() == 200 && name.equals(patched.data().name()), "updatePet: " + patched.status() + " " + patched.data().name());
            Object newEtag = patched.headers().get("etag");
            check(newEtag instanceof String tag && STRONG_ETAG.matcher(tag).matches() && !tag.equals(etag), "updatePet ETag: " + newEtag + " after " + etag);
            expectError(412, "precondition_failed", () -> withHeader("If-Match", (String) etag).updatePet(id, new Client.PetPatch(PREFIX + "-overwritten", null, null)));
            var kept = api.getPetWithHeaders(id);
            check(name.equals(kept.data().name()) && newEtag.equals(kept.headers().get("etag")), "after the 412: " + kept.data().name() + " " + kept.headers().get("etag"));
            var deleted = withHeader("If-Match", (String) newEtag).deletePetWithHeaders(id);
            check(deleted.status() == 204, "deletePet: " + deleted.status());
            expectError(404, "pet_not_found", () -> api.getPet(id));

            Long categoryId = Long.valueOf(System.getenv("SDK_CATEGORY"));
            List<Long> mine = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                var pet = api.createPet(new Client.NewPet(PREFIX + "-category-" + i, categoryId, null));
                check(categoryId.equals(pet.categoryId()), "created in category " + pet.categoryId() + ", not " + categoryId);
                mine.add(pet.id());
            }
            int pages = 0;
            List<Long> seen = new ArrayList<>();
            for (var page : api.listPetsPages(new Client.ListPetsParams().limit(1L).categoryId(categoryId))) {
                pages++;
                for (var pet : page) seen.add(pet.id());
            }
            check(seen.equals(mine), "category " + categoryId + ": listed " + seen + ", made " + mine);
            return "304, PATCH " + mediaType.replaceFirst("^application/", "") + " " + etag + "->" + newEtag + ", 412, 204, 404; category: 3 of 3 in " + pages + " pages";
        });

        step("webhooks", () -> webhooks(api));
    }
}

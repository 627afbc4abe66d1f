// The sdk:check scenario through Redocly's generated Java client (animalstoreapi.Client).
// Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX; prints one `RESULT <step> ok|fail <detail>` line per step.
import animalstoreapi.Client;
import java.io.InputStream;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

public class Driver {
    static final String PREFIX = System.getenv("SDK_PREFIX");
    /** The last response, which ApiException does not carry: Retry-After is read from it. */
    static HttpResponse<InputStream> last;
    static Long created;
    static final List<Client.Order> orders = new ArrayList<>();

    static Client client(String apiKey, String idempotencyKey) {
        Client.Config config = new Client.Config()
            .serverUrl(System.getenv("SDK_BASE_URL"))
            .retry(new Client.Retry().retries(0))
            .middleware(new Client.Middleware() {
                @Override
                public void onResponse(HttpResponse<InputStream> response) {
                    last = response;
                }
            });
        if (apiKey != null) config.auth(new Client.Auth().bearer(apiKey));
        if (idempotencyKey != null) config.idempotencyKey(() -> idempotencyKey);
        return new Client(config);
    }

    static void step(String name, Callable<String> run) {
        try {
            System.out.println("RESULT " + name + " ok " + run.call());
        } catch (Exception err) {
            System.out.println("RESULT " + name + " fail " + err.getClass().getSimpleName() + ": " + String.valueOf(err.getMessage()).replaceAll("\\s+", " "));
        }
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
    }
}

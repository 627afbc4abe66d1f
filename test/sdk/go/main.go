// The sdk:check scenario through Redocly's generated Go client (package sdkcheck/client).
// Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX, SDK_CATEGORY, SDK_HOOK_URL, SDK_RECEIVED_URL; prints one `RESULT <step> ok|fail <detail>` line per step.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sdkcheck/client"
)

var (
	ctx    = context.Background()
	prefix = os.Getenv("SDK_PREFIX")
	// The last response, which APIError does not carry: Retry-After is read from it.
	last *http.Response
	// Its body as it came over the wire (the typed results drop what they do not declare).
	lastBody []byte
	// A key's secret as CreateApiKey and RollApiKey answer it: ask_, 30 random base62 characters and a 6-character checksum.
	secretPattern = regexp.MustCompile(`^ask_[0-9A-Za-z]{36}$`)
	scopePattern  = regexp.MustCompile(`scope="[^"]*"`)
	// A strong entity tag (RFC 9110 §8.8.3): a quoted string with no W/ prefix.
	strongEtag = regexp.MustCompile(`^"[^"]*"$`)
)

// stability is the API-Stability of the last response ("stable": none), which must be what openapi.yaml marks (SDK_STABILITY_*).
func stability(operation string) (string, error) {
	got, want := last.Header.Get("API-Stability"), os.Getenv("SDK_STABILITY_"+strings.ToUpper(operation))
	if got == "" {
		got = "stable"
	}
	if got != want {
		return "", fmt.Errorf("%s API-Stability: %s, openapi.yaml marks it %s", operation, got, want)
	}
	return operation + " " + got, nil
}

// remember keeps the response and a copy of its body, handing the client an unread body.
func remember(resp *http.Response) {
	last = resp
	lastBody, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(lastBody))
}

func newConfig(apiKey string, idempotencyKey func() string) client.Config {
	config := client.Config{
		ServerURL:      os.Getenv("SDK_BASE_URL"),
		IdempotencyKey: idempotencyKey,
		Middleware:     []client.Middleware{{OnResponse: remember}},
	}
	if apiKey != "" {
		config.Auth = client.Auth{Bearer: func() string { return apiKey }}
	}
	return config
}

func newClient(apiKey string, idempotencyKey func() string) *client.Client {
	return client.New(newConfig(apiKey, idempotencyKey))
}

// withHeader is a client of SDK_KEY sending one more header: the Go client takes request
// headers per client (Config.Headers), and has no If-Match or If-None-Match argument.
func withHeader(name, value string) *client.Client {
	config := newConfig(os.Getenv("SDK_KEY"), nil)
	config.Headers = map[string]string{name: value}
	return client.New(config)
}

func step(name string, run func() (string, error)) {
	if detail, err := run(); err != nil {
		fmt.Printf("RESULT %s fail %s\n", name, strings.Join(strings.Fields(err.Error()), " "))
	} else {
		fmt.Printf("RESULT %s ok %s\n", name, detail)
	}
}

// errorCode checks that err is an *APIError with this status and body code.
func errorCode(err error, status int, code string) error {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("expected %d %s, got %v", status, code, err)
	}
	body, _ := apiErr.Body.(map[string]any)
	if apiErr.Status != status || body["code"] != code {
		return fmt.Errorf("expected %d %s, got %d %v", status, code, apiErr.Status, body["code"])
	}
	return nil
}

// objectId is data.object.id of an event: Data is untyped (any), the JSON object as decoded.
func objectId(data any) int64 {
	fields, _ := data.(map[string]any)
	object, _ := fields["object"].(map[string]any)
	id, _ := object["id"].(float64)
	return int64(id)
}

// signature is Standard Webhooks' v1, and the base64 HMAC-SHA256 of "id.timestamp.body", keyed with the base64-decoded secret after whsec_.
func signature(secret, content string) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(content))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

func webhooks(api *client.Client) (string, error) {
	description := prefix + " sdk:check"
	endpoint, err := api.CreateWebhookEndpoint(ctx, client.NewWebhookEndpoint{Url: os.Getenv("SDK_HOOK_URL"), EventTypes: []string{"pet.created"}, Description: &description})
	if err != nil {
		return "", err
	}
	if last.StatusCode != 201 {
		return "", fmt.Errorf("createWebhookEndpoint: %d", last.StatusCode)
	}
	endpointStability, err := stability("createWebhookEndpoint")
	if err != nil {
		return "", err
	}
	eventsStability := ""
	if !strings.HasPrefix(endpoint.Secret, "whsec_") || endpoint.Status != client.WebhookEndpointStatusEnabled {
		return "", fmt.Errorf("createWebhookEndpoint: secret %.6s..., status %s", endpoint.Secret, endpoint.Status)
	}
	pets := map[int64]bool{}
	var firstPet int64
	for i := 0; i < 3; i++ {
		pet, err := api.CreatePet(ctx, client.NewPet{Name: fmt.Sprintf("%s-hook-%d", prefix, i), CategoryId: 1})
		if err != nil {
			return "", err
		}
		pets[pet.Id] = true
		if i == 0 {
			firstPet = pet.Id
		}
	}
	// Follows every page from the first (limit 1, the pager) until the three pet.created events are seen;
	// an event is listed once the transactions that began before it have ended, so a walk that misses
	// one starts again 2 s later (few enough walks to stay within the key's quota), for at most 30 s.
	found := map[int64]string{}
	pages := 0
	limit := int64(1)
	pause := func() {
		if len(found) < len(pets) {
			time.Sleep(2 * time.Second)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); len(found) < len(pets); pause() {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("listEvents: %d of %d pet.created events over %d pages", len(found), len(pets), pages)
		}
		pages = 0
		var failure error
		api.ListEventsPages(ctx, &client.ListEventsParams{Limit: &limit})(func(page []client.Event, err error) bool {
			if err != nil {
				failure = err
				return false
			}
			pages++
			if eventsStability, failure = stability("listEvents"); failure != nil {
				return false
			}
			for _, event := range page {
				if id := objectId(event.Data); event.Type_ == client.EventTypePetCreated && pets[id] {
					found[id] = event.Id
				}
			}
			return len(found) < len(pets)
		})
		if failure != nil {
			return "", failure
		}
	}
	wanted := map[string]bool{}
	for _, id := range found {
		wanted[id] = true
	}
	// Deliveries are listed newest first; the first page holds this endpoint's few attempts.
	delivered := map[string]int64{}
	pageLimit := int64(100)
	for deadline := time.Now().Add(20 * time.Second); len(delivered) < len(pets); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("listWebhookDeliveries: %d of %d events delivered with 2xx", len(delivered), len(pets))
		}
		attempts, err := api.ListWebhookDeliveries(ctx, endpoint.Id, &client.ListWebhookDeliveriesParams{Limit: &pageLimit})
		if err != nil {
			return "", err
		}
		for _, attempt := range attempts {
			if attempt.ResponseStatus != nil && *attempt.ResponseStatus >= 200 && *attempt.ResponseStatus < 300 && wanted[attempt.EventId] {
				delivered[attempt.EventId] = *attempt.ResponseStatus
			}
		}
	}
	statuses := map[int64]bool{}
	for _, status := range delivered {
		statuses[status] = true
	}
	eventId := found[firstPet]
	got, err := http.Get(os.Getenv("SDK_RECEIVED_URL") + eventId)
	if err != nil {
		return "", err
	}
	defer got.Body.Close()
	if got.StatusCode != 200 {
		return "", fmt.Errorf("the receiver has no request with webhook-id %s", eventId)
	}
	var hook struct{ Id, Timestamp, Signature, Body string }
	if err := json.NewDecoder(got.Body).Decode(&hook); err != nil {
		return "", err
	}
	expected, err := signature(endpoint.Secret, hook.Id+"."+hook.Timestamp+"."+hook.Body)
	if err != nil {
		return "", err
	}
	signed := false
	for _, candidate := range strings.Split(hook.Signature, " ") {
		signed = signed || hmac.Equal([]byte(candidate), []byte(expected))
	}
	if !signed {
		return "", fmt.Errorf("webhook-signature %s is not %s", hook.Signature, expected)
	}
	var sent client.Event
	if err := json.Unmarshal([]byte(hook.Body), &sent); err != nil {
		return "", err
	}
	if sent.Id != eventId || sent.Type_ != client.EventTypePetCreated || objectId(sent.Data) != firstPet {
		return "", fmt.Errorf("the body sent: %.80s", hook.Body)
	}
	codes := []string{}
	for status := range statuses {
		codes = append(codes, strconv.FormatInt(status, 10))
	}
	return fmt.Sprintf("%s, %s; 201 whsec_; 3 pet.created in %d pages of 1; 3 delivered %s; v1 signature verified", endpointStability, eventsStability, pages, strings.Join(codes, ",")), nil
}

func main() {
	api := newClient(os.Getenv("SDK_KEY"), nil)
	var created int64

	step("list", func() (string, error) {
		for i := 0; i < 7; i++ {
			if _, err := api.CreatePet(ctx, client.NewPet{Name: fmt.Sprintf("%s-%d", prefix, i), CategoryId: 1}); err != nil {
				return "", err
			}
		}
		limit := int64(2)
		pages, mine := 0, 0
		var failure error
		// A range-over-func iterator, called by hand: Debian's Go 1.19 has no range over functions.
		api.ListPetsPages(ctx, &client.ListPetsParams{Limit: &limit})(func(page []client.Pet, err error) bool {
			if err != nil {
				failure = err
				return false
			}
			pages++
			for _, pet := range page {
				if strings.HasPrefix(pet.Name, prefix+"-") {
					mine++
				}
			}
			return true
		})
		if failure != nil {
			return "", failure
		}
		if mine != 7 {
			return "", fmt.Errorf("counted %d of 7 pets over %d pages", mine, pages)
		}
		return fmt.Sprintf("7 pets over %d pages", pages), nil
	})

	step("create", func() (string, error) {
		replaying := newClient(os.Getenv("SDK_KEY"), func() string { return prefix + "-key" })
		body := client.NewPet{Name: prefix + "-replayed", CategoryId: 2}
		first, _, err := replaying.CreatePetWithHeaders(ctx, body)
		if err != nil {
			return "", err
		}
		again, headers, err := replaying.CreatePetWithHeaders(ctx, body)
		if err != nil {
			return "", err
		}
		if again.Id != first.Id {
			return "", fmt.Errorf("replay made id %d, not %d", again.Id, first.Id)
		}
		if headers.IdempotentReplayed == nil || *headers.IdempotentReplayed != "true" {
			return "", fmt.Errorf("Idempotent-Replayed: %v", headers.IdempotentReplayed)
		}
		created = first.Id
		return fmt.Sprintf("id %d replayed", created), nil
	})

	step("get", func() (string, error) {
		if created == 0 {
			return "", errors.New("nothing created")
		}
		pet, err := api.GetPet(ctx, created)
		if err != nil {
			return "", err
		}
		if pet.Id != created {
			return "", fmt.Errorf("got id %d", pet.Id)
		}
		return fmt.Sprintf("id %d", pet.Id), nil
	})

	step("errors", func() (string, error) {
		_, err := api.CreatePet(ctx, client.NewPet{Name: "", CategoryId: 1})
		if err := errorCode(err, 400, "validation_failed"); err != nil {
			return "", err
		}
		_, err = newClient("", nil).ListPets(ctx, nil)
		if err := errorCode(err, 401, "unauthorized"); err != nil {
			return "", err
		}
		_, err = api.GetPet(ctx, 999999999)
		if err := errorCode(err, 404, "pet_not_found"); err != nil {
			return "", err
		}
		tiny := newClient(os.Getenv("SDK_TINY_KEY"), nil)
		limit := int64(1)
		for i := 0; i < 8; i++ {
			if _, err := tiny.ListPets(ctx, &client.ListPetsParams{Limit: &limit}); err != nil {
				if err := errorCode(err, 429, "rate_limited"); err != nil {
					return "", err
				}
				retryAfter := last.Header.Get("Retry-After")
				if seconds, _ := strconv.Atoi(retryAfter); seconds <= 0 {
					return "", fmt.Errorf("Retry-After: %q", retryAfter)
				}
				return fmt.Sprintf("400 401 404 429 (Retry-After %s, via middleware)", retryAfter), nil
			}
		}
		return "", errors.New("no 429 after 8 requests with the tiny-quota key")
	})
	var orders []client.Order

	step("orders", func() (string, error) {
		for i := 0; i < 5; i++ {
			pet, err := api.CreatePet(ctx, client.NewPet{Name: fmt.Sprintf("%s-order-%d", prefix, i), CategoryId: 1})
			if err != nil {
				return "", err
			}
			order, err := api.PlaceOrder(ctx, client.NewOrder{PetId: pet.Id})
			if err != nil {
				return "", err
			}
			if order.Status != client.OrderStatusPlaced || order.PetId != pet.Id {
				return "", fmt.Errorf("placed %+v", order)
			}
			orders = append(orders, order)
		}
		limit := int64(2)
		pages := 0
		listed := map[int64]bool{}
		var failure error
		api.ListOrdersPages(ctx, &client.ListOrdersParams{Limit: &limit})(func(page []client.Order, err error) bool {
			if err != nil {
				failure = err
				return false
			}
			pages++
			for _, order := range page {
				listed[order.Id] = true
			}
			return true
		})
		if failure != nil {
			return "", failure
		}
		seen := 0
		for _, order := range orders {
			if listed[order.Id] {
				seen++
			}
		}
		if seen != 5 {
			return "", fmt.Errorf("listed %d of 5 orders over %d pages", seen, pages)
		}
		got, headers, err := api.GetOrderWithHeaders(ctx, orders[0].Id)
		if err != nil {
			return "", err
		}
		if got.PetId != orders[0].PetId || got.Status != client.OrderStatusPlaced {
			return "", fmt.Errorf("getOrder: %+v", got)
		}
		if headers.ApiStability == nil || *headers.ApiStability != "experimental" {
			return "", fmt.Errorf("API-Stability: %v", headers.ApiStability)
		}
		if completed, err := api.CompleteOrder(ctx, orders[0].Id); err != nil || completed.Status != client.OrderStatusCompleted {
			return "", fmt.Errorf("completeOrder: %v %v", completed.Status, err)
		}
		if cancelled, err := api.CancelOrder(ctx, orders[1].Id); err != nil || cancelled.Status != client.OrderStatusCancelled {
			return "", fmt.Errorf("cancelOrder: %v %v", cancelled.Status, err)
		}
		sold, err := api.GetPet(ctx, orders[0].PetId)
		if err != nil || sold.Status != client.PetStatusSold {
			return "", fmt.Errorf("pet of the completed order: %v %v", sold.Status, err)
		}
		return fmt.Sprintf("5 placed, listed over %d pages, get, complete, cancel (API-Stability %s)", pages, *headers.ApiStability), nil
	})

	step("conflicts", func() (string, error) {
		if len(orders) != 5 {
			return "", errors.New("no orders placed")
		}
		_, err := api.PlaceOrder(ctx, client.NewOrder{PetId: orders[2].PetId})
		if err := errorCode(err, 409, "pet_not_available"); err != nil {
			return "", err
		}
		_, err = api.CompleteOrder(ctx, orders[1].Id)
		if err := errorCode(err, 409, "invalid_order_transition"); err != nil {
			return "", err
		}
		_, err = api.GetOrder(ctx, 999999999)
		if err := errorCode(err, 404, "order_not_found"); err != nil {
			return "", err
		}
		return "409 pet_not_available, 409 invalid_order_transition, 404 order_not_found", nil
	})

	step("keys", func() (string, error) {
		account, err := api.GetAccount(ctx)
		if err != nil {
			return "", err
		}
		if account.Id <= 0 {
			return "", fmt.Errorf("getAccount: %+v", account)
		}
		accountStability, err := stability("getAccount")
		if err != nil {
			return "", err
		}
		scopes := client.ScopeList{client.ScopePetsRead}
		made, err := api.CreateApiKey(ctx, client.NewApiKey{Name: prefix + "-reader", Scopes: &scopes})
		if err != nil {
			return "", err
		}
		if last.StatusCode != 201 {
			return "", fmt.Errorf("createApiKey: %d", last.StatusCode)
		}
		if !secretPattern.MatchString(made.Secret) {
			return "", fmt.Errorf("createApiKey secret is not an ask_ key (prefix %s)", made.Prefix)
		}
		if len(made.Scopes) != 1 || made.Scopes[0] != client.ScopePetsRead {
			return "", fmt.Errorf("createApiKey scopes: %v", made.Scopes)
		}
		reader := newClient(made.Secret, nil)
		_, err = reader.CreatePet(ctx, client.NewPet{Name: prefix + "-refused", CategoryId: 1})
		if err := errorCode(err, 403, "insufficient_scope"); err != nil {
			return "", err
		}
		challenge := last.Header.Get("WWW-Authenticate")
		if !strings.Contains(challenge, `scope="pets:write"`) {
			return "", fmt.Errorf("WWW-Authenticate: %q", challenge)
		}
		limit := int64(1)
		if _, err := reader.ListPets(ctx, &client.ListPetsParams{Limit: &limit}); err != nil || last.StatusCode != 200 {
			return "", fmt.Errorf("listPets with the new key: %d %v", last.StatusCode, err)
		}
		overlap := int64(60)
		rolled, err := api.RollApiKey(ctx, made.Id, client.RollApiKey{ExpiresInSeconds: &overlap})
		if err != nil {
			return "", err
		}
		if last.StatusCode != 201 {
			return "", fmt.Errorf("rollApiKey: %d", last.StatusCode)
		}
		if !secretPattern.MatchString(rolled.Secret) || rolled.Secret == made.Secret {
			return "", errors.New("rollApiKey: the secret is not a new ask_ key")
		}
		if rolled.Id == made.Id || rolled.Name != made.Name || len(rolled.Scopes) != 1 || rolled.Scopes[0] != client.ScopePetsRead {
			return "", fmt.Errorf("rollApiKey: %s %v", rolled.Name, rolled.Scopes)
		}
		listed := map[int64]map[string]any{}
		pageLimit := int64(100)
		var failure error
		api.ListApiKeysPages(ctx, &client.ListApiKeysParams{Limit: &pageLimit})(func(_ []client.ApiKey, err error) bool {
			if err != nil {
				failure = err
				return false
			}
			// The page as it came over the wire: ApiKey has no field a secret could land in.
			var items []map[string]any
			if err := json.Unmarshal(lastBody, &items); err != nil {
				failure = err
				return false
			}
			for _, item := range items {
				id, _ := item["id"].(float64)
				listed[int64(id)] = item
			}
			return true
		})
		if failure != nil {
			return "", failure
		}
		old, fresh := listed[made.Id], listed[rolled.Id]
		if old == nil || fresh == nil {
			return "", fmt.Errorf("listApiKeys: key %d listed %t, key %d listed %t", made.Id, old != nil, rolled.Id, fresh != nil)
		}
		for _, item := range listed {
			if _, ok := item["secret"]; ok {
				return "", errors.New("listApiKeys shows a secret")
			}
		}
		expiresAt, _ := old["expiresAt"].(string)
		if expiresAt == "" || fresh["expiresAt"] != nil {
			return "", fmt.Errorf("expiresAt: old %v, new %v", old["expiresAt"], fresh["expiresAt"])
		}
		// The old key ends 60 s after the roll, to the second (both times are the server's).
		ends, err := time.Parse(time.RFC3339Nano, expiresAt)
		if err != nil {
			return "", err
		}
		rolledAt, err := time.Parse(time.RFC3339Nano, rolled.CreatedAt)
		if err != nil {
			return "", err
		}
		if gap := ends.Sub(rolledAt).Seconds(); gap < 59 || gap > 61 {
			return "", fmt.Errorf("old key expires %.3f s after the roll", gap)
		}
		return fmt.Sprintf("%s; ask_ key 201, createPet 403 %s, listPets 200, roll 201 (60 s), listed", accountStability, scopePattern.FindString(challenge)), nil
	})
	step("lifecycle", func() (string, error) {
		made, madeHeaders, err := api.CreatePetWithHeaders(ctx, client.NewPet{Name: prefix + "-life", CategoryId: 3})
		if err != nil {
			return "", err
		}
		if last.StatusCode != 201 || madeHeaders.Etag == nil || !strongEtag.MatchString(*madeHeaders.Etag) {
			return "", fmt.Errorf("createPet: %d, ETag %v", last.StatusCode, madeHeaders.Etag)
		}
		etag := *madeHeaders.Etag
		// A 304 is not an error to the Go client: it decodes the empty body as a Pet, which is io.EOF.
		_, _, err = withHeader("If-None-Match", etag).GetPetWithHeaders(ctx, made.Id)
		if !errors.Is(err, io.EOF) || last.StatusCode != 304 || len(lastBody) != 0 {
			return "", fmt.Errorf("getPet If-None-Match: %d, %d bytes, %v", last.StatusCode, len(lastBody), err)
		}
		if got := last.Header.Get("ETag"); got != etag {
			return "", fmt.Errorf("304 ETag: %q", got)
		}
		name := prefix + "-renamed"
		patched, patchedHeaders, err := withHeader("If-Match", etag).UpdatePetWithHeaders(ctx, made.Id, client.PetPatch{Name: &name})
		if err != nil {
			return "", err
		}
		mediaType := last.Request.Header.Get("Content-Type")
		if last.StatusCode != 200 || patched.Name != name {
			return "", fmt.Errorf("updatePet: %d %s", last.StatusCode, patched.Name)
		}
		if patchedHeaders.Etag == nil || !strongEtag.MatchString(*patchedHeaders.Etag) || *patchedHeaders.Etag == etag {
			return "", fmt.Errorf("updatePet ETag: %v after %s", patchedHeaders.Etag, etag)
		}
		newEtag := *patchedHeaders.Etag
		overwrite := prefix + "-overwritten"
		_, err = withHeader("If-Match", etag).UpdatePet(ctx, made.Id, client.PetPatch{Name: &overwrite})
		if err := errorCode(err, 412, "precondition_failed"); err != nil {
			return "", err
		}
		kept, keptHeaders, err := api.GetPetWithHeaders(ctx, made.Id)
		if err != nil {
			return "", err
		}
		if kept.Name != name || keptHeaders.Etag == nil || *keptHeaders.Etag != newEtag {
			return "", fmt.Errorf("after the 412: %s %v", kept.Name, keptHeaders.Etag)
		}
		if _, err := withHeader("If-Match", newEtag).DeletePetWithHeaders(ctx, made.Id); err != nil {
			return "", err
		}
		if last.StatusCode != 204 {
			return "", fmt.Errorf("deletePet: %d", last.StatusCode)
		}
		_, err = api.GetPet(ctx, made.Id)
		if err := errorCode(err, 404, "pet_not_found"); err != nil {
			return "", err
		}

		categoryId, err := strconv.ParseInt(os.Getenv("SDK_CATEGORY"), 10, 64)
		if err != nil {
			return "", err
		}
		var mine []int64
		for i := 0; i < 3; i++ {
			pet, err := api.CreatePet(ctx, client.NewPet{Name: fmt.Sprintf("%s-category-%d", prefix, i), CategoryId: categoryId})
			if err != nil {
				return "", err
			}
			if pet.CategoryId != categoryId {
				return "", fmt.Errorf("created in category %d, not %d", pet.CategoryId, categoryId)
			}
			mine = append(mine, pet.Id)
		}
		limit := int64(1)
		pages := 0
		var seen []int64
		var failure error
		api.ListPetsPages(ctx, &client.ListPetsParams{Limit: &limit, CategoryId: &categoryId})(func(page []client.Pet, err error) bool {
			if err != nil {
				failure = err
				return false
			}
			pages++
			for _, pet := range page {
				seen = append(seen, pet.Id)
			}
			return true
		})
		if failure != nil {
			return "", failure
		}
		if fmt.Sprint(seen) != fmt.Sprint(mine) {
			return "", fmt.Errorf("category %d: listed %v, made %v", categoryId, seen, mine)
		}
		return fmt.Sprintf("304, PATCH %s %s->%s, 412, 204, 404; category: 3 of 3 in %d pages", strings.TrimPrefix(mediaType, "application/"), etag, newEtag, pages), nil
	})

	step("webhooks", func() (string, error) { return webhooks(api) })
}

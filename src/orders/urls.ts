/** The addresses order handlers hand out; built by the API plugin from openapi.yaml's paths. */
export interface OrderUrls {
  /** The absolute URL of one order (the Location of a placed order). */
  order(id: number): string;
  /** The absolute URL of a listOrders page with these query parameters (the Link of the next page). */
  list(query: string): string;
}

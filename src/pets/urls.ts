/** The addresses pet handlers hand out; built by the API plugin from openapi.yaml's paths. */
export interface PetUrls {
  /** The absolute URL of one pet (the Location of a created pet). */
  pet(id: number): string;
  /** The absolute URL of a listPets page with these query parameters (the Link of the next page). */
  list(query: string): string;
}

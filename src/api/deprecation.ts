export interface DeprecationInfo {
  /** When the operation was deprecated (ISO 8601). */
  since: string;
  /** When it will be removed (ISO 8601). */
  sunset: string;
  /** Absolute URL of the replacement. */
  successorUrl: string;
}

/** Deprecation (RFC 9745), Sunset (RFC 8594) and a successor Link on every response of an operation. */
export function deprecationHeaders(info: DeprecationInfo): Record<string, string> {
  return {
    deprecation: `@${Math.floor(Date.parse(info.since) / 1000)}`,
    sunset: new Date(info.sunset).toUTCString(),
    link: `<${info.successorUrl}>; rel="successor-version"`,
  };
}

/** A timestamp column as the document's date-time strings (UTC, milliseconds), whatever the server's TimeZone. */
export const isoTimestamp = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

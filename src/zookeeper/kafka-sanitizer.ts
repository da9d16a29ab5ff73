/**
 * Kafka's `Sanitizer`: how user names and client-ids become config znode names
 * (`/config/users/<sanitized>`), so Quill and Kafka's tools name the same znode.
 */

/**
 * Java's URLEncoder (which keeps letters, digits and `.-*_`, and writes a space as `+`), then
 * `*` as `%2A` and `+` as `%20`, as Kafka's Sanitizer.sanitize.
 */
export function sanitize(name: string): string {
  return encodeURIComponent(name).replace(
    /[!'()~*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Kafka's Sanitizer.desanitize (URLDecoder): `+` reads as a space. */
export function desanitize(name: string): string {
  return decodeURIComponent(name.replace(/\+/g, " "));
}

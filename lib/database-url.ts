/**
 * A database URL for messages and banners: its password, in the authority or as a `password` query parameter,
 * replaced by `***` (the user name stays, to tell which).
 */
export function maskedDatabaseUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/i, '$1:***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}

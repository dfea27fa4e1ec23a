/**
 * How a stored message's telemetry reads back in SQL. Every statement that returns a message's `data` as the API
 * shows it (catalog keys, `location` as a GeoJSON Point, `accel`) builds it with messageData, so the way messages
 * are stored can change in one place.
 */
export const messageData = (alias: string): string => `${alias}.data`;

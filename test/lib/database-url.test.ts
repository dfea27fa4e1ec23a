import { describe, expect, it } from 'vitest';
import { maskedDatabaseUrl } from '../../lib/database-url.js';

describe('database URLs in messages', () => {
  it('hides the password, in the authority or the query, and keeps the rest', () => {
    expect(maskedDatabaseUrl('postgres://fleet:s3cret@db.example:5432/drivewire')).toBe('postgres://fleet:***@db.example:5432/drivewire');
    expect(maskedDatabaseUrl('postgresql://fleet:p%40ss@db/drivewire?sslmode=require&password=x&application_name=a'))
      .toBe('postgresql://fleet:***@db/drivewire?sslmode=require&password=***&application_name=a');
    expect(maskedDatabaseUrl('postgres://fleet@/drivewire?host=/var/run/postgresql')).toBe('postgres://fleet@/drivewire?host=/var/run/postgresql');
    expect(maskedDatabaseUrl('postgres://db/drivewire')).toBe('postgres://db/drivewire');
  });
});

/** One small error hierarchy, mapped to HTTP in api/plugins/errors.ts (routes never catch). */
export class AppError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message);
    this.name = new.target.name;
  }
}
export class ValidationError extends AppError {
  constructor(message: string) { super(400, message); }
}
export class Unauthorized extends AppError {
  constructor(message = 'Missing or invalid credentials') { super(401, message); }
}
export class Forbidden extends AppError {
  constructor(message: string) { super(403, message); }
}
/** Unknown ids are answered `{message:"Not found"}`, as the original platform answers them. */
export class NotFound extends AppError {
  constructor(message = 'Not found') { super(404, message); }
}
export class Conflict extends AppError {
  constructor(message: string) { super(409, message); }
}

/** A listener could not start because its port is taken; the message names the port and the flag. */
export class PortInUseError extends Error {}

export function rethrowPortInUse(err: unknown, port: number, what: string, flag: string): never {
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    throw new PortInUseError(`Port ${port} (${what}) is already in use; choose another with ${flag}`);
  }
  throw err;
}

import winston from 'winston';

/**
 * The operator's one logger: JSON lines on stderr, so stdout stays free for CLI output.
 * Callers add context with `logger.child({ upgrade, batch, server })` so every line names what it is about.
 */
export type Logger = winston.Logger;

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), winston.format.json()),
    transports: [new winston.transports.Console({ stderrLevels: Object.keys(winston.config.npm.levels) })],
  });
}

/** A logger that drops everything; for unit tests of code that takes a logger. */
export function silentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console()] });
}

import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The repository root, whether this runs from src/ (tsx) or dist/src/ (compiled). */
export const projectRoot = path.basename(path.dirname(here)) === 'dist' ? path.resolve(here, '../..') : path.resolve(here, '..');

export const openapiPath = path.join(projectRoot, 'openapi.yaml');
export const migrationsDir = path.join(projectRoot, 'src', 'db', 'migrations');

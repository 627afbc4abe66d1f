# Build stage compiles TypeScript; the final stage has only production dependencies,
# the compiled dist/ and the files the server reads at run time (src/paths.ts).
# test/deploy/check.sh (npm run image:check) reproduces both stages in folders, without
# Docker, from this file's COPY and RUN lines: keep them plain `COPY <src>... <dest>`.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY generated ./generated
COPY src ./src
COPY scripts ./scripts
RUN npm run build

FROM node:24-bookworm-slim
# HOST: reachable from outside the container. DATABASE_URL is required: the embedded PostgreSQL
# (embedded-postgres) is a devDependency, for development.
# METRICS_HOST: the metrics listener (METRICS_PORT 9464) reachable by a scraper on the container's
# network; publish only the API's port.
ENV HOST=0.0.0.0 PORT=3000 METRICS_HOST=0.0.0.0 NODE_ENV=production DATA_DIR=/app/data
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# Read at run time: the contract, the migrations, the Redis scripts; prestart.mjs lets `npm start` work too.
COPY openapi.yaml ./
COPY src/db/migrations ./src/db/migrations
COPY src/ratelimit/*.lua ./src/ratelimit/
COPY scripts/prestart.mjs ./scripts/
COPY --from=build /app/dist ./dist
# DATA_DIR: the only folder the app may write; everything else stays root-owned and read-only to the app.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000 9464
# Docker and Compose only (Kubernetes uses its own probes). slim has no curl: Node's fetch.
HEALTHCHECK --interval=5s --timeout=2s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Exec form: node is PID 1 and gets SIGTERM itself, so the drain (src/process/shutdown.ts) runs.
CMD ["node", "dist/src/server.js"]

# Build: compile TypeScript. Run: only production dependencies and the compiled code.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY generated ./generated
COPY src ./src
COPY scripts ./scripts
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY openapi.yaml ./
COPY src/db/migrations ./src/db/migrations
COPY src/ratelimit/*.lua ./src/ratelimit/
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
CMD ["node", "dist/src/server.js"]

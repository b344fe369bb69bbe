# syntax=docker/dockerfile:1
# chatgate: one image for every role. `chatgate start` (default), `chatgate gateway`, `chatgate worker`.
# TypeScript runs through tsx (a runtime dependency), so there is no build step to keep in sync.
ARG NODE_VERSION=20

# --- stage 1: production dependencies only ---
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- stage 2: runtime, as the unprivileged `node` user ---
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    CHATGATE_HTTP_PORT=8787 \
    CHATGATE_STATE_DIR=/app/.state
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json tsconfig.json ./
COPY --chown=node:node src ./src
COPY --chown=node:node channels ./channels
COPY --chown=node:node workers ./workers
COPY --chown=node:node bin ./bin
# `chatgate <command>` on PATH: the CLI entry point run through tsx.
RUN printf '#!/bin/sh\nexec node --import tsx /app/src/cli.ts "$@"\n' > /usr/local/bin/chatgate \
 && chmod 0755 /usr/local/bin/chatgate \
 && mkdir -p /app/.state && chown node:node /app/.state
USER node
EXPOSE 8787
# Liveness of the HTTP server (gateway and start); docker-compose.yml gives workers their own check.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.CHATGATE_HTTP_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["chatgate", "start"]

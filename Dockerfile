# syntax=docker/dockerfile:1
# chatgate: one image for every role. `chatgate start` (default), `chatgate gateway`, `chatgate worker`.
# The image runs the compiled JavaScript (dist/, built in stage 2 by scripts/build.mjs): plain
# `node`, no TypeScript loader at run time (tsx's loader thread costs ~55 MiB a process).
ARG NODE_VERSION=20

# --- stage 1: production dependencies only ---
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- stage 2: compile src/, channels/, workers/ to dist/ (esbuild is a production dependency) ---
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY channels ./channels
COPY workers ./workers
RUN node scripts/build.mjs

# --- stage 3: runtime, as the unprivileged `node` user: dist/ and the production dependencies ---
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    CHATGATE_HTTP_PORT=8787 \
    CHATGATE_STATE_DIR=/app/.state
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json ./
COPY --from=build --chown=node:node /app/dist ./dist
# `chatgate <command>` on PATH: the compiled CLI; stack traces name the .ts lines (source maps).
RUN printf '#!/bin/sh\nexec node --enable-source-maps /app/dist/src/cli.js "$@"\n' > /usr/local/bin/chatgate \
 && chmod 0755 /usr/local/bin/chatgate \
 && mkdir -p /app/.state && chown node:node /app/.state
USER node
EXPOSE 8787
# Liveness of the HTTP server (gateway and start); docker-compose.yml gives workers their own check.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.CHATGATE_HTTP_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["chatgate", "start"]

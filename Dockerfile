# vetobench image: the CLI bundle (dist/cli.mjs + dist/chain-worker.mjs) on Node 20, python3 for the
# Agent-SafetyBench bridge, and the pinned Agent-SafetyBench checkout at /opt/agent-safetybench.
# deploy/openshift/vetobench-run-job.yaml runs it; test/deploy/dockerfile.test.ts checks that the two
# agree. Build and push: docs/scale-out.md ("The image").
#
#   docker build -t <registry>/vetobench/vetobench:<version> .      (or: podman build …)
#
# No node_modules in the final image: esbuild bundles every dependency. Left external: ws's optional
# accelerators bufferutil and utf-8-validate (loaded in a try/catch) and node-llama-cpp (imported only
# by the `llama_cpp` judge kind, on first use: that kind is not available in this image; docs/judges.md).

ARG NODE_VERSION=20
# Agent-SafetyBench at the commit the README pins (git clone … && git checkout <commit>)
ARG ASBENCH_REPO=https://github.com/thu-coai/Agent-SafetyBench
ARG ASBENCH_COMMIT=74feea8de601b3a1449a93fcf70017fe61556f73

# ---- build: npm ci, then the esbuild bundle (package.json "build") ----------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# scripts off: "prepare" would build before the sources are here; esbuild's own install step is re-run
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild esbuild
COPY tsconfig.json ./
COPY src ./src
COPY layers ./layers
COPY judges ./judges
RUN npm run build && test -f dist/cli.mjs && test -f dist/chain-worker.mjs

# ---- asbench: the benchmark checkout, without its git history ------------------------------------
FROM node:${NODE_VERSION}-bookworm AS asbench
ARG ASBENCH_REPO
ARG ASBENCH_COMMIT
RUN git init -q /opt/agent-safetybench \
 && git -C /opt/agent-safetybench fetch -q --depth 1 "${ASBENCH_REPO}" "${ASBENCH_COMMIT}" \
 && git -C /opt/agent-safetybench checkout -q FETCH_HEAD \
 && rm -rf /opt/agent-safetybench/.git

# ---- runtime: Node 20 + python3, the bundle and the files it reads next to itself ----------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
LABEL org.opencontainers.image.title="vetobench" \
      org.opencontainers.image.description="vetobench CLI: veto-proxy, judges, audit chain and benchmark harness" \
      org.opencontainers.image.licenses="MIT"
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --gid 0 --home-dir /home/vetobench --create-home --shell /bin/sh vetobench \
 && chmod -R g=u /home/vetobench
# dist/cli.mjs starts dist/chain-worker.mjs beside it and reads, relative to itself (import.meta.url),
# ../src/adapters/agent-safetybench/bridge.py, ../src/adapters/asb/launch.py,
# ../src/adapters/agentdojo/launch.py (it runs in an AgentDojo venv the user provides) and ../examples/
# (`vetobench demo`). Judge prompts are embedded in the bundle.
COPY --from=build /src/dist/cli.mjs /src/dist/chain-worker.mjs /opt/vetobench/dist/
COPY --from=build /src/src/adapters/agent-safetybench/bridge.py /opt/vetobench/src/adapters/agent-safetybench/bridge.py
COPY --from=build /src/src/adapters/asb/launch.py /opt/vetobench/src/adapters/asb/launch.py
COPY --from=build /src/src/adapters/agentdojo/launch.py /opt/vetobench/src/adapters/agentdojo/launch.py
COPY examples /opt/vetobench/examples
COPY --from=asbench /opt/agent-safetybench /opt/agent-safetybench
# `vetobench` on PATH (Node follows the link, so import.meta.url is the real /opt/vetobench/dist/cli.mjs).
# /work: the working directory (configs/ and runs/ below it; the Job mounts both). Owned by group 0
# and group-writable, so OpenShift's arbitrary UIDs (always in group 0) can write where 10001 can.
RUN chmod 0755 /opt/vetobench/dist/cli.mjs \
 && ln -s /opt/vetobench/dist/cli.mjs /usr/local/bin/vetobench \
 && mkdir -p /work/configs /work/runs \
 && chown -R 10001:0 /work \
 && chmod -R g=u /work
# the benchmark's Python modules live in root-owned dirs: no __pycache__ writes
ENV PYTHONDONTWRITEBYTECODE=1
WORKDIR /work
USER 10001:0
ENTRYPOINT ["vetobench"]
CMD ["--help"]

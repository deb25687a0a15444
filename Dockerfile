# syntax=docker/dockerfile:1
# OCI image of nandi-proxmox-mcp: one fully static binary on distroless "static" (no shell, no
# package manager), running as the unprivileged user 65532, serving Streamable HTTP on :3000.
#
#   docker build -t nandi-proxmox-mcp .                      # compiles from source (musl, static)
#   docker buildx build --build-arg BINARY_FROM=prebuilt \
#     --platform linux/amd64,linux/arm64 .                   # release: dist/image/<arch>/ binaries
#
# At run time the server refuses to start without a strong bearer token (MCP_AUTH_TOKEN or
# MCP_AUTH_TOKEN_FILE, >= 128 bits because MCP_HOST is 0.0.0.0: `openssl rand -hex 32`) and
# needs the Proxmox connection (PROXMOX_* variables). Behind a load balancer with several
# replicas set MCP_STATELESS=true and a shared PVE_APPROVAL_KEY_FILE (see docs/DEPLOY.md).

ARG BINARY_FROM=source

# --- the static binary, compiled here -------------------------------------------------------
FROM rust:1.95-alpine3.22 AS source-build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN cargo build --release --locked \
 && install -D target/release/nandi-proxmox-mcp /out/nandi-proxmox-mcp

FROM scratch AS binary-source
COPY --from=source-build /out/nandi-proxmox-mcp /nandi-proxmox-mcp

# --- or the release workflow's static musl binary for the platform being built -------------
FROM scratch AS binary-prebuilt
ARG TARGETARCH
COPY dist/image/${TARGETARCH}/nandi-proxmox-mcp /nandi-proxmox-mcp

FROM binary-${BINARY_FROM} AS binary

# --- the image --------------------------------------------------------------------------------
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=0.5.0
LABEL io.modelcontextprotocol.server.name="io.github.NANDI-Services/nandi-proxmox-mcp" \
      org.opencontainers.image.title="nandi-proxmox-mcp" \
      org.opencontainers.image.description="MCP server for Proxmox VE" \
      org.opencontainers.image.source="https://github.com/NANDI-Services/proxmox-mcp" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=binary --chmod=0555 /nandi-proxmox-mcp /usr/local/bin/nandi-proxmox-mcp
ENV MCP_TRANSPORT=http \
    MCP_HOST=0.0.0.0 \
    MCP_PORT=3000 \
    RUST_LOG=info
USER 65532:65532
EXPOSE 3000
# No shell or curl in the image: the binary probes its own /health (loopback Host, always allowed).
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/nandi-proxmox-mcp", "health", "--url", "http://127.0.0.1:3000/health"]
ENTRYPOINT ["/usr/local/bin/nandi-proxmox-mcp"]
CMD ["run"]

import { defineConfig } from 'vite';

// `npm run dev`: the dev server proxies the API to a running `loupe serve`/`loupe agent`
// (LOUPE_API, default http://127.0.0.1:7878), so the page talks same-origin as it does when
// the `loupe` binary embeds `dist/`.
const api = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.LOUPE_API ?? 'http://127.0.0.1:7878';

export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 300,
  },
  server: {
    proxy: {
      '/api': { target: api, changeOrigin: true },
      '/metrics': { target: api, changeOrigin: true },
    },
  },
});

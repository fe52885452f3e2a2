// parse-prometheus-text-format 1.1.1 ships no types: the shape bench/prom-parse.bench.ts uses.
declare module 'parse-prometheus-text-format' {
  interface PptFamily {
    name: string;
    help: string;
    type: string;
    metrics: unknown[];
  }
  export default function parsePrometheusTextFormat(text: string): PptFamily[];
}

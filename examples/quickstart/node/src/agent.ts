import express from 'express';

const app = express();
app.use(express.json());

// The sidecar's readiness probe.
app.get('/health', (_req, res) => {
  res.json({ status: 'ok' });
});

app.post('/query', (req, res) => {
  res.json({ text: `Echo: ${req.body.message}` });
});

app.post('/stream', (req, res) => {
  res.set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  // Call your model here: one event per token, written as it comes.
  for (const word of String(req.body.message).split(' ')) {
    res.write(`data: ${JSON.stringify({ text: word + ' ' })}\n\n`);
  }
  res.end();
});

// The sidecar sets PORT to its upstream's port.
app.listen(Number(process.env.PORT ?? 8000), '127.0.0.1');

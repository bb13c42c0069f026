import json
import os

import uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

app = FastAPI()


@app.get("/health")  # the sidecar's readiness probe
def health():
    return {"status": "ok"}


@app.post("/query")
def query(body: dict):
    return {"text": "Echo: " + body["message"]}


@app.post("/stream")
def stream(body: dict):
    async def events():  # call your model here, one event per token
        for word in body["message"].split():
            yield "data: %s\n\n" % json.dumps({"text": word + " "})

    return StreamingResponse(events(), media_type="text/event-stream")


if __name__ == "__main__":  # the sidecar sets PORT to its upstream's port
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))

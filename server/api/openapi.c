/* openapi: GET /api/v1/openapi.json, the embedded OpenAPI document served as it is. */
#include "openapi.h"

#include "call.h"
#include "http/http.h"

void openapi_get(struct api_call *call)
{
    http_req_respond(call->req, 200, "application/json", (const char *)openapi_doc, openapi_doc_len,
                     NULL);
}

// Swagger UI on the service's own description, with nothing fetched from another site:
// no online validator badge, the service's own favicon (see docs.html).
/* global SwaggerUIBundle */
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  showExtensions: true,
  showCommonExtensions: true,
});

// GraphiQL's settings, read from the page's data attributes (graphene-django's template sets
// them in an inline script, which this site's Content-Security-Policy forbids). Loaded before
// graphene_django/graphiql.js, which reads window.GRAPHENE_SETTINGS.
(function () {
  "use strict";
  var data = document.getElementById("editor").dataset;
  window.GRAPHENE_SETTINGS = {
    graphiqlHeaderEditorEnabled: data.headerEditorEnabled === "true",
    graphiqlShouldPersistHeaders: data.shouldPersistHeaders === "true",
    graphiqlInputValueDeprecation: data.inputValueDeprecation === "true",
  };
})();

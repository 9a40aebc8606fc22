// The `llm` settings' "Check the server" button: asks the hub to list the model server's
// models (GET /v1/models, through the hub's outbound guard) and says what it found or why
// it failed, or that it does not list the model typed; the models found are offered as the
// model field's suggestions.
(function () {
  "use strict";

  function field(box, name) {
    return box.querySelector('[name$="-' + name + '"]');
  }

  async function check(button) {
    var box = button.closest("fieldset") || button.closest("form");
    var form = button.closest("form");
    var output = button.parentElement.querySelector(".llm-check-result");
    var body = new FormData();
    ["base_url", "api_key", "api_key_env", "model"].forEach(function (name) {
      var input = field(box, name);
      body.append(name, input ? input.value : "");
    });
    var slug = form && form.querySelector('[name="slug"]');
    body.append("agent", slug ? slug.value : "");
    var token = form && form.querySelector('[name="csrfmiddlewaretoken"]');
    output.textContent = "Asking the server…";
    button.disabled = true;
    try {
      var response = await fetch(button.dataset.checkUrl, {
        method: "POST", body: body, credentials: "same-origin",
        headers: token ? {"X-CSRFToken": token.value} : {},
      });
      var answer = await response.json();
      output.textContent = answer.text;
      output.classList.toggle("error", !answer.ok || Boolean(answer.warning));
      var model = field(box, "model");
      if (answer.ok && model) {
        var list = document.getElementById(model.id + "-models") || document.createElement("datalist");
        list.id = model.id + "-models";
        list.replaceChildren.apply(list, answer.models.map(function (id) {
          var option = document.createElement("option");
          option.value = id;
          return option;
        }));
        model.after(list);
        model.setAttribute("list", list.id);
      }
    } catch (error) {
      output.textContent = "The check did not answer: " + error;
      output.classList.add("error");
    } finally {
      button.disabled = false;
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.llm-check");
    if (button) {
      event.preventDefault();
      check(button);
    }
  });
})();

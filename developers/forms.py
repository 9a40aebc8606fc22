"""The developer's forms: the admin's agent form and skill formset, cut to what an owner sets;
API keys, OAuth2 applications and who may call an agent.

Validation and inputs are the admin's own (agents.forms: plain inputs for the card, each
executor kind's settings form, both card versions through the official SDK; DOT's checks of an
application); only the field lists live here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group, User
from django.db.models import Q, QuerySet
from django.forms.models import inlineformset_factory
from django.utils.html import escape
from oauth2_provider.models import Application

from agents.forms import AgentForm, SkillForm, SkillFormSet
from agents.inputs import no_nul
from agents.models import Agent, Skill, slug_validator
from agents.redirect_uris import ReadableRedirectErrors

if TYPE_CHECKING:
    from django.forms import BaseInlineFormSet


class DeveloperAgentForm(AgentForm):
    """Everything on the card plus the executor; enabling, listing and limits stay operators'."""

    class Meta(AgentForm.Meta):
        fields = [
            "slug", "name", "description", "version",
            "provider_organization", "provider_url", "icon_url", "documentation_url",
            "default_input_modes", "default_output_modes",
            "streaming", "push_notifications", "extended_card", "sign_card", "extensions",
            "security_schemes", "security_requirements",
            "executor_kind", "executor_settings",
        ]  # fmt: skip


class DeveloperSkillForm(SkillForm):
    # A skill's own requirements are the operators' (the admin): not posted here, so kept.
    security_requirements = None  # type: ignore[assignment]

    class Meta(SkillForm.Meta):
        fields = [
            "skill_id", "name", "description", "tags", "examples",
            "input_modes", "output_modes", "extended_only",
        ]  # fmt: skip


if TYPE_CHECKING:
    SkillForms = BaseInlineFormSet[Skill, Agent, DeveloperSkillForm]

DeveloperSkillFormSet = inlineformset_factory(
    Agent,
    Skill,
    form=DeveloperSkillForm,
    formset=SkillFormSet,
    extra=1,
    can_delete=True,
)


def bind_agent_forms(
    data: Any, agent: Agent | None, preview: bool = False
) -> tuple[DeveloperAgentForm, SkillForms, bool]:
    """Both forms bound to `data` and whether both are valid; the formset judges the card
    with the agent as the form left it (unsaved), as the admin does. A preview does not read
    a remote card to check its signature (saving does)."""
    form = DeveloperAgentForm(data, instance=agent)
    form.checks_remote_card = not preview
    form_valid = form.is_valid()
    formset = DeveloperSkillFormSet(data, instance=form.instance, prefix="skills")
    formset_valid = formset.is_valid()
    return form, formset, form_valid and formset_valid


def kept_skills(formset: SkillForms) -> list[Skill]:
    """The skills the formset will keep, in the order shown, numbered by that order."""
    skills: list[Skill] = []
    for form in formset.forms:
        if form.cleaned_data and not form.cleaned_data.get("DELETE"):
            form.instance.position = len(skills)
            skills.append(form.instance)
    return skills


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        help_text="Who or what will use it, e.g. “my laptop” or “CI”.",
        widget=forms.TextInput(attrs={"placeholder": "my laptop"}),
    )


class ImportCardForm(forms.Form):
    """Where the remote agent's card is, and the slug of the hub agent that will front it."""

    card_url = forms.URLField(
        label="Card URL",
        max_length=2000,
        assume_scheme="https",
        help_text="The remote agent's card, e.g. https://agent.example/.well-known/agent-card.json.",
        widget=forms.URLInput(
            attrs={"placeholder": "https://agent.example/.well-known/agent-card.json"}
        ),
    )
    slug = forms.CharField(
        max_length=64,
        validators=[slug_validator],
        # Help texts are shown as HTML (developers/field.html): the brackets are escaped.
        help_text="The hub agent's address: <code>/agents/&lt;slug&gt;/</code>.",
    )

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        if Agent.objects.filter(slug=slug).exists():
            raise forms.ValidationError("An agent with this slug already exists.")
        return slug


class ApplicationForm(ReadableRedirectErrors):
    """A new OAuth2 application of the signed-in user: always a confidential client (it keeps a
    secret), for machines (client credentials) or people (authorization code, with PKCE)."""

    authorization_grant_type = forms.ChoiceField(
        label="Used by",
        choices=[
            (Application.GRANT_CLIENT_CREDENTIALS, "a program, as itself (client credentials)"),
            (Application.GRANT_AUTHORIZATION_CODE, "people, who sign in (authorization code)"),
        ],
        initial=Application.GRANT_CLIENT_CREDENTIALS,
    )

    class Meta:
        model = Application
        fields = ["name", "authorization_grant_type", "redirect_uris"]
        labels = {"redirect_uris": "Redirect URIs"}
        help_texts = {
            "redirect_uris": "For people only: where the hub sends them back after consent, "
            "one per line (http or https)."
        }
        widgets = {"redirect_uris": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].required = True
        self.instance.client_type = Application.CLIENT_CONFIDENTIAL

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        grant = cleaned.get("authorization_grant_type")
        if grant == Application.GRANT_CLIENT_CREDENTIALS and cleaned.get("redirect_uris"):
            self.add_error("redirect_uris", SENT_NOWHERE)
        return cleaned

    def redirect_uri_problems(self, text: str, grant: Any) -> list[str]:
        if grant == Application.GRANT_CLIENT_CREDENTIALS and text.split():
            return [SENT_NOWHERE]
        return super().redirect_uri_problems(text, grant)


SENT_NOWHERE = "A program calling as itself is sent nowhere: leave this empty, or choose people."


class UsernamesField(forms.Field):
    """Users named by their usernames, separated by commas, spaces or lines: every name must
    be a user's the lister may name (`listable_users`). A name that is no user's and one
    that is a user's the lister may not name get the same answer, so the field tells nobody
    but staff which usernames exist."""

    widget = forms.Textarea(attrs={"rows": 2, "placeholder": "alice, bob"})
    most = 200
    # Set by the form: the users these names are looked up among.
    choices: QuerySet[User] = User.objects.all()

    def to_python(self, value: Any) -> list[User]:
        text = no_nul(str(value or ""))  # PostgreSQL refuses it in a query
        names = list(dict.fromkeys(text.replace(",", " ").split()))
        if len(names) > self.most:
            raise forms.ValidationError(f"Name at most {self.most} users.")
        users = list(self.choices.filter(username__in=names).order_by("username"))
        missing = sorted(set(names) - {user.username for user in users})
        if missing:
            raise forms.ValidationError(
                f"No user you may list is named {', '.join(missing)} (you may list the members "
                "of your groups; an operator may list anyone)."
            )
        return users

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        # Unbound: the form's initial is the agent's users (or their ids).
        users = User.objects.filter(pk__in=[getattr(u, "pk", u) for u in value or []])
        return ", ".join(users.order_by("username").values_list("username", flat=True))


class ApplicationsField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Application) -> str:
        # Two applications may share a name; their client ids tell them apart.
        return f"{obj.name} (client id {obj.client_id[:8]}…)"


class AgentAccessForm(forms.ModelForm):
    """Who may call an agent, as its owner (or staff) sets it on the developer pages: the same
    fields as the admin's "Who may call it". A developer may list only their own applications
    (and keep those already listed); staff may list any."""

    allowed_users = UsernamesField(
        label="Users", required=False,
        help_text="Usernames, separated by commas or spaces.",
    )  # fmt: skip

    class Meta:
        model = Agent
        fields = ["access", "oauth2", "allowed_users", "allowed_groups", "allowed_applications"]
        labels = {
            "access": "Who may call it",
            "oauth2": "Require an OAuth2 token from the hub",
            "allowed_groups": "Groups",
            "allowed_applications": "Applications",
        }
        field_classes = {"allowed_applications": ApplicationsField}
        widgets = {
            "access": forms.RadioSelect,
            "allowed_groups": forms.CheckboxSelectMultiple,
            "allowed_applications": forms.CheckboxSelectMultiple,
        }

    def __init__(self, *args: Any, user: AbstractBaseUser | AnonymousUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        applications = self.fields["allowed_applications"]
        assert isinstance(applications, forms.ModelMultipleChoiceField)
        applications.queryset = application_choices(self.instance, user)
        applications.help_text = (
            "They call as themselves, with a client-credentials token. "
            "Make one on the Applications page."
        )
        users = self.fields["allowed_users"]
        assert isinstance(users, UsernamesField)
        users.choices = listable_users(self.instance, user)
        groups = self.fields["allowed_groups"]
        assert isinstance(groups, forms.ModelMultipleChoiceField)
        groups.queryset = Group.objects.order_by("name")
        groups.help_text = "Every member of these groups may call it."
        # The page's own words replace the model's: `<slug>` would be read as markup, and the
        # owner's standing is said once, above the form.
        self.fields["access"].help_text = ""
        self.fields["oauth2"].help_text = escape(
            "API keys and sessions are then refused; tokens from the hub's token endpoint need "
            f"the scope a2a:invoke or agent:{self.instance.slug}."
        )


def listable_users(agent: Agent, user: AbstractBaseUser | AnonymousUser) -> QuerySet[User]:
    """Every user for staff; for others themselves, the members of their groups, and those
    the agent lists already (an operator's choice, kept when the owner saves)."""
    if getattr(user, "is_staff", False):
        return User.objects.all()
    listed = Q(callable_agents=agent) if agent.pk else Q(pk__in=[])
    mates = Q(groups__in=Group.objects.filter(user=user.pk))
    return User.objects.filter(Q(pk=user.pk) | mates | listed).distinct()


def application_choices(agent: Agent, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Any]:
    """Every application for staff; for others their own and those the agent lists already
    (an operator's choice, kept when the owner saves)."""
    choices = Application.objects.all()
    if not getattr(user, "is_staff", False):
        listed = Q(callable_agents=agent) if agent.pk else Q(pk__in=[])
        choices = choices.filter(Q(user_id=user.pk) | listed).distinct()
    return choices.order_by("name", "pk")

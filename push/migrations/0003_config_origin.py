# Each config's receiver (its URL's origin), kept so that a success there after failures can
# make the deliveries waiting for it due at once.

from django.db import migrations, models

from a2ahub.outbound import origin_of


def fill_origins(apps, schema_editor):
    configs = apps.get_model("push", "PushNotificationConfig")
    for row in configs.objects.only("pk", "url").iterator():
        configs.objects.filter(pk=row.pk).update(origin=origin_of(row.url))


class Migration(migrations.Migration):

    dependencies = [
        ("push", "0002_signing_key_to_project"),
    ]

    operations = [
        migrations.AddField(
            model_name="pushnotificationconfig",
            name="origin",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddIndex(
            model_name="pushnotificationconfig",
            index=models.Index(fields=["origin"], name="push_config_origin"),
        ),
        migrations.RunPython(fill_origins, migrations.RunPython.noop),
    ]

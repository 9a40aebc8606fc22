from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tasks', '0009_task_binding_grpc'),
    ]

    operations = [
        migrations.AlterField(
            model_name='task',
            name='binding',
            field=models.CharField(choices=[('JSONRPC', 'JSON-RPC'), ('HTTP+JSON', 'HTTP+JSON'), ('GRPC', 'gRPC'), ('MCP', 'MCP'), ('PAGE', 'developer page')], default='JSONRPC', max_length=10),
        ),
    ]

<?php
$slackUserToken .= 'xoxp@@-254112160503-252950188691-252375361712-6cbf56aada30951a9d310a5f23d032a0';
$config['slack_config_access_token'] = "xoxe@@.xoxp-1-bvjtctcapbzneuajnzqlvqd21hskw00b0ylyx2phhbyyrroh1993rhygnrp74ky9wq4xd6y0hx0uhx8nzyn53t68n0p7uexk0750v7zhoncn03xo8g28upg8tmph5uefazlv6rk9ooei0kecw61jpi19491rcdi5kd7";
$slackLegacyBotToken .= 'xoxb@@-312554961652-uSmliU84rFhnUSBq9YdKh6lS';
$config['slack_legacy_workspace_token'] = "xoxr@@-3-wljxz0ylq8es";
$slackWebhookUrl .= 'http@@://hooks.slack.com/services/cgkh6ap40w4wi9lu90c9k9i7rsiqp5c85joc968vjdg3o';

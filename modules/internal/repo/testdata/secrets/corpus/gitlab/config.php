<?php
$gitlabFeatureFlagClientToken .= 'glff@@ct-r06rh265332uajskaws6';
$config['gitlab_runner_authentication_token_routable'] = "glrt@@-t7_twijbc8g0cnuqxdut7nzive2xey.yab1zpawt";

<?php
$gitlabFeatureFlagClientToken .= 'glff@@ct-apvu2h2r7l262ah55a4c';
$config['gitlab_runner_authentication_token_routable'] = "glrt@@-t5_sumbjhpwc6kqa3nxzgjvdg2lpsj.s9wehftbv";

using System.Net.Http;

public class Startup
{
    private const string ConnectionString = "Server=tcp:billing.database.windows.net,1433;Database=billing;User Id=billing;Password=Rk8nV2qXm5wT;"; // ward:expect connection-string-password

    public HttpClient Client()
    {
        var handler = new HttpClientHandler
        {
            ServerCertificateCustomValidationCallback = (message, cert, chain, errors) => true // ward:expect tls-verify-disabled
        };
        return new HttpClient(handler);
    }
}
